//! Splitting a corpus into N shards: `--shard K/N` analyses the K-th of N
//! contiguous runs of documents, cut so that each holds about 1/N of the
//! corpus's bytes.
//!
//! The split depends only on the ordered list of document sizes, which every
//! run of the same inputs finds alike (the list is sorted), so each shard of
//! a Slurm array computes the same split on its own and takes its part:
//! document i, of size sᵢ and with Cᵢ bytes before it in a corpus of T bytes,
//! goes to shard ⌊N·(Cᵢ + sᵢ/2)/T⌋, the shard its middle byte falls in.
//! Shards are contiguous, every document is in exactly one, and a shard's
//! bytes differ from T/N by at most one document. A shard may get no
//! document (a corpus of fewer documents than shards, or one huge
//! document); it still writes its (empty) part, so a merge can tell it ran.

use serde::{Deserialize, Serialize};
use std::ops::Range;

/// Shard `index` of `count` (0-based, as Slurm numbers array tasks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// The whole corpus: shard 0 of 1.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of `count`; `None` unless index < count.
    pub fn new(index: usize, count: usize) -> Option<Self> {
        (index < count).then_some(Self { index, count })
    }

    /// Which of `sizes.len()` documents of these sizes (in corpus order)
    /// this shard analyses.
    pub fn range(&self, sizes: &[u64]) -> Range<usize> {
        // The shard of a document never decreases along the corpus, so each
        // shard's documents are the run between two boundaries.
        let first = first_document_of(sizes, self.index, self.count);
        let end = first_document_of(sizes, self.index + 1, self.count);
        first..end.max(first)
    }
}

/// The first document whose shard is `shard` or later (`sizes.len()` when
/// none). The last document's middle byte can sit at T itself (an empty
/// last document): it then belongs to the last shard, as `shard ≥ count`
/// ends every range there.
fn first_document_of(sizes: &[u64], shard: usize, count: usize) -> usize {
    if shard == 0 {
        return 0;
    }
    if shard >= count {
        return sizes.len();
    }
    let total: u128 = sizes.iter().map(|&s| s as u128).sum();
    let count = count as u128;
    let shard = shard as u128;
    let mut before: u128 = 0;
    for (index, &size) in sizes.iter().enumerate() {
        // shard_of(i) = ⌊N·(2Cᵢ + sᵢ) / 2T⌋, exact in integers; by position
        // when every document is empty.
        let assigned = if total == 0 {
            count * (2 * index as u128 + 1) / (2 * sizes.len() as u128)
        } else {
            count * (2 * before + size as u128) / (2 * total)
        };
        if assigned >= shard {
            return index;
        }
        before += size as u128;
    }
    sizes.len()
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = String;

    /// `K/N` with 0 ≤ K < N, as `--shard` takes it.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let usage = || {
            format!(
                "--shard {text}: expected K/N, shard K (counting from 0) of N, e.g. 0/4 \
                 (in a Slurm array: $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT)"
            )
        };
        let (index, count) = text.trim().split_once('/').ok_or_else(usage)?;
        let index: usize = index.trim().parse().map_err(|_| usage())?;
        let count: usize = count.trim().parse().map_err(|_| usage())?;
        if count == 0 {
            return Err(format!("--shard {text}: N must be at least 1"));
        }
        Shard::new(index, count).ok_or_else(|| {
            format!(
                "--shard {text}: K counts from 0, so it must be below N = {count} (0 to {})",
                count - 1
            )
        })
    }
}
