//! What the user chooses: the similarity variant, the pair selection rule
//! and the local window (ANALYSIS.md §2–§4); the defaults are the contract's.

use serde::{Deserialize, Serialize};

/// Which similarity the pair selection ranks (ANALYSIS.md §2).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Default)]
#[serde(rename_all = "snake_case")]
pub enum SimilarityVariant {
    /// The raw dot products O·Oᵀ.
    #[default]
    Raw,
    /// S_ij / sqrt(S_ii · S_jj).
    Cosine,
    /// S_ij / S_ii: each row relative to the token's own norm.
    RowOverDiagonal,
    /// (S − mean) / std over all T×T entries of the head.
    ZScore,
}

impl SimilarityVariant {
    /// Every variant, in the order the settings list them.
    pub const ALL: [SimilarityVariant; 4] = [
        SimilarityVariant::Raw,
        SimilarityVariant::Cosine,
        SimilarityVariant::RowOverDiagonal,
        SimilarityVariant::ZScore,
    ];

    /// Short human-readable name.
    pub fn label(self) -> &'static str {
        match self {
            SimilarityVariant::Raw => "raw dot product",
            SimilarityVariant::Cosine => "cosine",
            SimilarityVariant::RowOverDiagonal => "row / diagonal",
            SimilarityVariant::ZScore => "z-score within head",
        }
    }
}

/// How the high-similarity pairs of a head are chosen (ANALYSIS.md §3).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum Selection {
    /// The k = max(1, floor(q·N)) candidates with the largest S, ties by pair order.
    TopFraction { q: f64 },
    /// Every candidate with S > mean + z·std (over the head's candidates).
    AboveMean { z: f64 },
    /// Each content token's k most similar content partners (row values
    /// S[i, j], ties by position), as unordered pairs without duplicates.
    TopKPerRow { k: usize },
}

impl Selection {
    pub const DEFAULT_Q: f64 = 0.01;
    pub const DEFAULT_Z: f64 = 3.0;
    pub const DEFAULT_K: usize = 1;
}

impl Default for Selection {
    fn default() -> Self {
        Selection::TopFraction {
            q: Selection::DEFAULT_Q,
        }
    }
}

/// Every user-adjustable choice of the analysis; the defaults are ANALYSIS.md's.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(default)]
pub struct AnalysisOptions {
    pub selection: Selection,
    pub similarity: SimilarityVariant,
    /// w: the largest j − i a same-sentence pair may span to count as local.
    pub local_window: usize,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        Self {
            selection: Selection::default(),
            similarity: SimilarityVariant::default(),
            local_window: 4,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_round_trip_through_json() {
        let options = AnalysisOptions {
            selection: Selection::AboveMean { z: 2.5 },
            similarity: SimilarityVariant::RowOverDiagonal,
            local_window: 3,
        };
        let json = serde_json::to_string(&options).unwrap();
        assert_eq!(
            json,
            r#"{"selection":{"rule":"above_mean","z":2.5},"similarity":"row_over_diagonal","local_window":3}"#
        );
        assert_eq!(
            serde_json::from_str::<AnalysisOptions>(&json).unwrap(),
            options
        );
        assert_eq!(
            serde_json::from_str::<AnalysisOptions>("{}").unwrap(),
            AnalysisOptions::default()
        );
    }
}
