//! What a decoder predicts, from its logits (one float32 per vocabulary
//! entry): probabilities (softmax in float32), the likeliest tokens, the
//! next token picked greedily (the largest logit, ties to the smallest id,
//! as torch's `argmax`) or sampled (temperature, top-k, top-p, from a
//! seeded ChaCha generator: a seed repeats its run exactly), and the logit
//! lens' table (each layer's likeliest next tokens at every position).
//!
//! Pure: the model computes the logits ([`crate::model::predict`]).

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// softmax(logits), in float32 with the largest logit subtracted first.
pub fn softmax(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exps: Vec<f32> = logits.iter().map(|&l| (l - max).exp()).collect();
    let sum: f32 = exps.iter().sum();
    exps.into_iter().map(|e| e / sum).collect()
}

/// The `k` largest values and their ids, largest first (equal values by
/// ascending id).
pub fn top_k(values: &[f32], k: usize) -> Vec<(u32, f32)> {
    let mut order: Vec<u32> = (0..values.len() as u32).collect();
    let by_value = |a: &u32, b: &u32| {
        values[*b as usize]
            .total_cmp(&values[*a as usize])
            .then(a.cmp(b))
    };
    let k = k.min(order.len());
    if k < order.len() && k > 0 {
        order.select_nth_unstable_by(k - 1, by_value);
        order.truncate(k);
    }
    order.sort_by(by_value);
    order.truncate(k);
    order
        .into_iter()
        .map(|id| (id, values[id as usize]))
        .collect()
}

/// The id of the largest logit; of equal ones the smallest id.
pub fn greedy(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (id, &logit) in logits.iter().enumerate() {
        if logit > logits[best] {
            best = id;
        }
    }
    best as u32
}

/// How the next token is drawn when it is sampled: as transformers'
/// warpers, the logits divided by `temperature`, then only the `top_k`
/// likeliest kept (0: all), then only the likeliest whose probabilities
/// reach `top_p` (1: all).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    pub temperature: f32,
    pub top_p: f32,
    pub top_k: usize,
    pub seed: u64,
}

impl Default for Sampling {
    fn default() -> Self {
        Self {
            temperature: 1.0,
            top_p: 1.0,
            top_k: 0,
            seed: 0,
        }
    }
}

impl Sampling {
    /// An error naming the setting that is out of range.
    pub fn check(&self) -> Result<(), SamplingError> {
        if !(self.temperature.is_finite() && self.temperature > 0.0) {
            return Err(SamplingError::Temperature(self.temperature));
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(SamplingError::TopP(self.top_p));
        }
        Ok(())
    }
}

/// A [`Sampling`] setting out of range; the message starts with the
/// setting's name, so that the CLI can put `--` before it.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum SamplingError {
    #[error("temperature {0} is not above 0 (for greedy decoding, sample nothing)")]
    Temperature(f32),
    #[error("top-p {0} is outside (0, 1]")]
    TopP(f32),
}

/// Draws tokens as a [`Sampling`] says, from its own seeded generator.
pub struct Sampler {
    sampling: Sampling,
    rng: ChaCha8Rng,
}

impl Sampler {
    pub fn new(sampling: Sampling) -> Self {
        Self {
            sampling,
            rng: ChaCha8Rng::seed_from_u64(sampling.seed),
        }
    }

    /// The next token, drawn from `logits`.
    pub fn pick(&mut self, logits: &[f32]) -> u32 {
        let temperature = self.sampling.temperature;
        let scaled: Vec<f32> = logits.iter().map(|&l| l / temperature).collect();
        let keep = match self.sampling.top_k {
            0 => scaled.len(),
            k => k.min(scaled.len()),
        };
        let candidates = top_k(&scaled, keep);
        let ids: Vec<u32> = candidates.iter().map(|&(id, _)| id).collect();
        let scores: Vec<f32> = candidates.iter().map(|&(_, s)| s).collect();
        let probabilities = softmax(&scores);
        // The likeliest whose probabilities reach top-p, at least one.
        let mut cumulative = 0.0;
        let mut kept = probabilities.len();
        for (index, &p) in probabilities.iter().enumerate() {
            cumulative += p;
            if cumulative >= self.sampling.top_p {
                kept = index + 1;
                break;
            }
        }
        let total: f32 = probabilities[..kept].iter().sum();
        // A uniform draw in [0, 1) from the generator's top 53 bits.
        let draw = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let mut threshold = draw * f64::from(total);
        for (&id, &p) in ids.iter().zip(&probabilities[..kept]) {
            threshold -= f64::from(p);
            if threshold < 0.0 {
                return id;
            }
        }
        ids[kept - 1]
    }
}

/// How the next token is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub enum Decoding {
    /// The likeliest token (ties to the smallest id).
    #[default]
    Greedy,
    Sampled(Sampling),
}

/// One layer's likeliest next tokens at every position, as `analyze
/// --logit-lens` writes them: `top_ids[t]` and `top_probs[t]`, likeliest
/// first; `next_token_ranks[t]`, the rank (1: the likeliest) of the true
/// next token, the input's token t + 1, at each position that has one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LensLayer {
    pub top_ids: Vec<Vec<u32>>,
    pub top_probs: Vec<Vec<f32>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next_token_ranks: Vec<u32>,
}

impl LensLayer {
    /// The rows of positions of `logits` (rows × vocab): each one's `k`
    /// likeliest, and the rank of its true next token where `next_ids`
    /// (the ids after these rows, one per row but the input's last) has
    /// one.
    pub fn of_logits(logits: &[f32], vocab: usize, k: usize, next_ids: &[u32]) -> Self {
        let mut layer = Self::default();
        for (row, logits) in logits.chunks(vocab.max(1)).enumerate() {
            let top = top_k(&softmax(logits), k);
            layer.top_ids.push(top.iter().map(|&(id, _)| id).collect());
            layer.top_probs.push(top.iter().map(|&(_, p)| p).collect());
            if let Some(&next) = next_ids.get(row) {
                layer.next_token_ranks.push(rank(logits, next));
            }
        }
        layer
    }

    /// Appends the rows of `part` (the positions after this one's).
    pub fn extend(&mut self, part: LensLayer) {
        self.top_ids.extend(part.top_ids);
        self.top_probs.extend(part.top_probs);
        self.next_token_ranks.extend(part.next_token_ranks);
    }
}

/// The rank of token `id` among `logits` as [`top_k`] orders them: 1 + the
/// number of larger logits and of equal ones with smaller ids.
pub fn rank(logits: &[f32], id: u32) -> u32 {
    let Some(&own) = logits.get(id as usize) else {
        return logits.len() as u32 + 1;
    };
    let ahead = logits
        .iter()
        .enumerate()
        .filter(|&(other, &logit)| logit > own || (logit == own && (other as u32) < id))
        .count();
    ahead as u32 + 1
}

/// The logit lens (nostalgebraist's): for each layer l, the final norm and
/// the LM head applied to the residual stream after layer l, at every
/// position; the last layer's is the model's own prediction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LogitLens {
    pub layers: Vec<LensLayer>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_takes_the_smallest_of_equal_ids() {
        assert_eq!(greedy(&[0.5, 2.0, -1.0, 2.0]), 1);
        assert_eq!(greedy(&[3.0]), 0);
    }

    #[test]
    fn rank_agrees_with_top_k() {
        let values = [0.1, 0.4, 0.4, 0.05, 0.05];
        for (place, (id, _)) in top_k(&values, 5).into_iter().enumerate() {
            assert_eq!(rank(&values, id), place as u32 + 1);
        }
        let layer = LensLayer::of_logits(&[1.0, 3.0, 2.0, 0.0, 5.0, 4.0], 3, 2, &[2]);
        assert_eq!(layer.top_ids, vec![vec![1, 2], vec![1, 2]]);
        assert_eq!(layer.next_token_ranks, vec![2]);
    }

    #[test]
    fn top_k_orders_by_value_then_id() {
        let values = [0.1, 0.4, 0.4, 0.05, 0.05];
        assert_eq!(top_k(&values, 3), vec![(1, 0.4), (2, 0.4), (0, 0.1)]);
        assert_eq!(top_k(&values, 9).len(), 5);
    }

    #[test]
    fn softmax_sums_to_one_and_keeps_the_order() {
        let p = softmax(&[1.0, 3.0, 2.0, -50.0]);
        assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(p[1] > p[2] && p[2] > p[0] && p[3] < 1e-20);
    }

    /// A seed repeats its draws; top-k 1 and a tiny top-p are greedy; the
    /// draws follow the probabilities.
    #[test]
    fn sampling_is_seeded_and_follows_its_settings() {
        let logits = [1.0, 2.0, 0.5, 1.9, -3.0];
        let draw = |sampling: Sampling| -> Vec<u32> {
            let mut sampler = Sampler::new(sampling);
            (0..400).map(|_| sampler.pick(&logits)).collect()
        };
        let sampling = Sampling {
            seed: 7,
            ..Sampling::default()
        };
        let first = draw(sampling);
        assert_eq!(first, draw(sampling));
        assert_ne!(
            first,
            draw(Sampling {
                seed: 8,
                ..sampling
            })
        );
        for narrow in [
            Sampling {
                top_k: 1,
                ..sampling
            },
            Sampling {
                top_p: 0.01,
                ..sampling
            },
        ] {
            assert!(draw(narrow).iter().all(|&id| id == 1));
        }
        // Token 1 (p ≈ 0.39) is drawn about as often as its probability says.
        let share = first.iter().filter(|&&id| id == 1).count() as f64 / first.len() as f64;
        let p = f64::from(softmax(&logits)[1]);
        assert!((share - p).abs() < 0.08, "{share} vs {p}");
        // top-k 2 keeps tokens 1 and 3 only.
        let two = draw(Sampling {
            top_k: 2,
            ..sampling
        });
        assert!(two.iter().all(|&id| id == 1 || id == 3));
        assert!(two.contains(&3));
    }
}
