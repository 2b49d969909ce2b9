#!/usr/bin/env python3
"""The induction probe's ids (ANALYSIS.md §9), drawn as `src/probe.rs`
draws them, written again from the algorithms' definitions so that the
reference does not take headscope's word for them:

- the seed: rand_core's `SeedableRng::seed_from_u64(0)`, 32 bytes from
  PCG32 (multiplier 6364136223846793005, increment 11634580027462260723,
  the state advanced before each output, XSH-RR output, little-endian);
- the generator: ChaCha with 8 rounds (rand_chacha's `ChaCha8Rng`), that
  seed as its key, a 64-bit block counter from 0 and stream 0; each `u64`
  is two consecutive output words, the first the low half;
- the draw: the candidates are the ids 1000 .. min(vocab, 20000) − 1 that
  are not special, ascending; n of them; each draw takes the next u64 x,
  rejects it when x ≥ n·⌊2⁶⁴ / n⌋ and otherwise takes candidate x mod n;
  R = 50 draws, with replacement.

    python3 reference/probe_ids.py [VOCAB]    # prints R for a vocabulary without special ids
"""
import sys

M32 = 0xffffffff

def pcg32_seed(state):
    """rand_core's SeedableRng::seed_from_u64: 32 seed bytes from PCG32."""
    out = b""
    for _ in range(8):
        state = (state * 6364136223846793005 + 11634580027462260723) & 0xffffffffffffffff
        xorshifted = (((state >> 18) ^ state) >> 27) & M32
        rot = state >> 59
        x = ((xorshifted >> rot) | (xorshifted << ((32 - rot) & 31))) & M32
        out += x.to_bytes(4, "little")
    return out

def rotl(x, n):
    return ((x << n) | (x >> (32 - n))) & M32

def quarter(s, a, b, c, d):
    s[a] = (s[a] + s[b]) & M32; s[d] = rotl(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & M32; s[b] = rotl(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & M32; s[d] = rotl(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & M32; s[b] = rotl(s[b] ^ s[c], 7)

def chacha8_u64s(seed_u64):
    key = pcg32_seed(seed_u64)
    k = [int.from_bytes(key[4 * i:4 * i + 4], "little") for i in range(8)]
    counter = 0
    while True:
        init = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574] + k + [counter & M32, counter >> 32, 0, 0]
        s = init[:]
        for _ in range(4):
            quarter(s, 0, 4, 8, 12); quarter(s, 1, 5, 9, 13); quarter(s, 2, 6, 10, 14); quarter(s, 3, 7, 11, 15)
            quarter(s, 0, 5, 10, 15); quarter(s, 1, 6, 11, 12); quarter(s, 2, 7, 8, 13); quarter(s, 3, 4, 9, 14)
        words = [(a + b) & M32 for a, b in zip(s, init)]
        for i in range(0, 16, 2):
            yield words[i] | (words[i + 1] << 32)
        counter += 1

def probe_draw(vocab, special=lambda i: False, r=50):
    cands = [i for i in range(1000, min(vocab, 20000)) if not special(i)]
    n = len(cands)
    limit = (1 << 64) // n * n
    out = []
    for x in chacha8_u64s(0):
        if len(out) == r:
            break
        if x < limit:
            out.append(cands[x % n])
    return out


def probe_ids(tok):
    """The probe for a `tokenizers.Tokenizer`: its leading special tokens
    (what it adds before a text), R, R; and how many lead."""
    specials = {i for i, t in tok.get_added_tokens_decoder().items() if t.special}
    enc = tok.encode("a", add_special_tokens=True)
    lead = []
    for i, mask in zip(enc.ids, enc.special_tokens_mask):
        if not (mask or i in specials):
            break
        lead.append(i)
    r = probe_draw(tok.get_vocab_size(with_added_tokens=True), lambda i: i in specials)
    return lead + r + r, len(lead)


if __name__ == "__main__":
    print(probe_draw(int(sys.argv[1]) if len(sys.argv) > 1 else 49152))
