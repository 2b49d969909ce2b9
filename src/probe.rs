//! The induction probe of ANALYSIS.md §9: an input on which previous-token
//! and induction heads show whatever the vocabulary. It is the tokenizer's
//! leading special tokens (a BOS, or an encoder's `[CLS]`), then R = 50
//! random token ids, then the same R again: in the second half every token
//! has occurred once before, and the token after that occurrence is the
//! one that comes next, which an induction head attends to.
//!
//! The ids must be the same on every machine and in every version, so the
//! draw is fixed here rather than left to a library's sampling helpers
//! (whose algorithms may change): ChaCha8 seeded with 0 through
//! `seed_from_u64`, the candidates every id in 1000 .. min(vocab, 20000) − 1
//! that is not special, in ascending order, and each of the R draws takes
//! the generator's next `u64` x, rejects it when x ≥ n·⌊2⁶⁴ / n⌋ (n
//! candidates: that keeps the draw exactly uniform), and otherwise picks
//! candidate x mod n. Draws are with replacement, like TransformerLens'
//! repeated random tokens.

use crate::tokens::{SpecialTokens, TokenSequence};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokenizers::Tokenizer;

/// Random tokens in each half of the probe.
pub const PROBE_REPEAT: usize = 50;
/// The generator's seed.
pub const PROBE_SEED: u64 = 0;
/// The smallest id drawn: below it vocabularies keep bytes, punctuation
/// and special tokens.
pub const PROBE_LOWEST_ID: u32 = 1000;
/// One past the largest id drawn (unless the vocabulary is smaller): ids
/// beyond it are the vocabulary's rarest pieces.
pub const PROBE_ID_END: u32 = 20000;

/// The R ids of one half of the probe for a vocabulary of `vocabulary`
/// ids, `special` saying which are special (never drawn). Empty when no id
/// qualifies (a vocabulary of at most 1000 ids).
pub fn probe_draw(vocabulary: usize, special: impl Fn(u32) -> bool) -> Vec<u32> {
    let end = PROBE_ID_END.min(u32::try_from(vocabulary).unwrap_or(u32::MAX));
    let candidates: Vec<u32> = (PROBE_LOWEST_ID..end).filter(|&id| !special(id)).collect();
    if candidates.is_empty() {
        return Vec::new();
    }
    let n = candidates.len() as u64;
    // n·⌊2⁶⁴ / n⌋: draws at or above it would favour the first candidates.
    let accepted_below = (1u128 << 64) / u128::from(n) * u128::from(n);
    let mut rng = ChaCha8Rng::seed_from_u64(PROBE_SEED);
    let mut drawn = Vec::with_capacity(PROBE_REPEAT);
    while drawn.len() < PROBE_REPEAT {
        let x = rng.next_u64();
        if u128::from(x) < accepted_below {
            drawn.push(candidates[(x % n) as usize]);
        }
    }
    drawn
}

/// Why a model's tokenizer cannot make the probe.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    #[error("the vocabulary has no ids from 1000 on to draw the probe from")]
    NoIdsToDraw,
    #[error("{0}")]
    Tokenizer(String),
}

/// The probe's input for a model's tokenizer: its leading special tokens
/// (what it adds before a text, if anything), R, R; one sentence of
/// content tokens. `causal` as the model is.
pub fn probe_sequence(
    tokenizer: &Tokenizer,
    specials: &SpecialTokens,
) -> Result<TokenSequence, ProbeError> {
    let added: Vec<u32> = tokenizer
        .get_added_tokens_decoder()
        .into_iter()
        .filter(|(_, token)| token.special)
        .map(|(id, _)| id)
        .collect();
    let special = |id: u32| specials.contains(id) || added.contains(&id);
    let drawn = probe_draw(tokenizer.get_vocab_size(true), special);
    if drawn.is_empty() {
        return Err(ProbeError::NoIdsToDraw);
    }
    // What the tokenizer puts before a text: the special tokens that lead
    // its encoding of one word.
    let encoding = tokenizer
        .encode("a", true)
        .map_err(|e| ProbeError::Tokenizer(e.to_string()))?;
    let leading: Vec<u32> = encoding
        .get_ids()
        .iter()
        .zip(encoding.get_special_tokens_mask())
        .take_while(|&(&id, &mask)| mask == 1 || added.contains(&id))
        .map(|(&id, _)| id)
        .collect();
    let mut tokens = TokenSequence {
        sep_id: specials.separator.id,
        cls_id: specials.start.id,
        causal: specials.causal_attention(),
        bidirectional_decoder: specials.bidirectional_decoder,
        style: specials.style,
        ..TokenSequence::default()
    };
    for &id in &leading {
        push(&mut tokens, tokenizer, id, true);
    }
    for &id in drawn.iter().chain(&drawn) {
        push(&mut tokens, tokenizer, id, false);
    }
    Ok(tokens)
}

fn push(tokens: &mut TokenSequence, tokenizer: &Tokenizer, id: u32, special: bool) {
    tokens.input_ids.push(id);
    tokens
        .token_texts
        .push(tokenizer.id_to_token(id).unwrap_or_default());
    tokens.special.push(special);
    tokens.sentence_ids.push((!special).then_some(0));
    tokens.offsets.push(None);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The draw is pinned: these ids are what every machine draws, now and
    /// in later versions (a change here changes every probe's figures).
    /// `reference/probe_ids.py`, written from the definitions of PCG32,
    /// ChaCha8 and the draw, gives the same.
    #[test]
    fn the_draw_is_the_same_everywhere() {
        let drawn = probe_draw(49152, |_| false);
        assert_eq!(drawn.len(), PROBE_REPEAT);
        assert_eq!(&drawn[..5], &[1652, 12623, 9878, 13556, 12681], "{drawn:?}");
        assert_eq!(drawn[PROBE_REPEAT - 1], 7869, "{drawn:?}");
        assert!(drawn.iter().all(|&id| (1000..20000).contains(&id)));
        assert_eq!(drawn, probe_draw(49152, |_| false));
    }

    /// Special ids are never drawn, and a small vocabulary bounds the draw.
    #[test]
    fn the_draw_keeps_to_its_range() {
        let drawn = probe_draw(1010, |id| id % 2 == 0);
        assert_eq!(drawn.len(), PROBE_REPEAT);
        assert!(drawn
            .iter()
            .all(|&id| id % 2 == 1 && (1000..1010).contains(&id)));
        assert!(probe_draw(1000, |_| false).is_empty());
    }
}
