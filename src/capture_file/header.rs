//! The JSON header of a capture file (docs/CAPTURE.md): what the model
//! read and what it was, stored under the key [`HEADER_KEY`] of the
//! safetensors metadata. Token offsets are in characters (Unicode scalar
//! values, as Python indexes a `str`), so that a capture written from
//! Python and one written here say the same thing.

use serde::{Deserialize, Serialize};

/// The safetensors metadata key that holds the header.
pub const HEADER_KEY: &str = "headscope";
/// The `format` every capture file names.
pub const FORMAT: &str = "headscope-capture";
/// The version this build writes and reads.
pub const VERSION: u32 = 1;

/// Everything a capture file says besides its tensors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`VERSION`]; a reader refuses any other.
    pub version: u32,
    pub model: ModelDescription,
    /// Whether a query sees only the keys up to itself (a decoder).
    pub causal: bool,
    /// The analysed text; the token offsets point into it.
    pub text: String,
    pub layers: usize,
    pub heads: usize,
    pub head_dim: usize,
    /// Whether every layer's attention P is in the file.
    pub attentions: bool,
    /// Whether every layer's value norms ‖v_j W_O^h‖ are in the file
    /// (ANALYSIS.md §9; absent in files written before them).
    #[serde(default)]
    pub value_norms: bool,
    pub tokens: TokenTable,
    /// What the cut of a long text left out (ANALYSIS.md §1).
    #[serde(default)]
    pub sentences_left_out: usize,
    #[serde(default)]
    pub tokens_left_out: usize,
    /// What wrote the file (`headscope 0.1.0`, `headscope-python 0.1.0`).
    #[serde(default)]
    pub producer: String,
}

/// The model a capture was taken of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelDescription {
    /// As the user knows it: a folder's name, a hub id, a class name.
    pub name: String,
    /// `model_type` of its config (`bert`, `llama`) or any other word for
    /// a model headscope cannot run itself.
    #[serde(rename = "type")]
    pub kind: String,
}

/// The input sequence, one entry per position.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TokenTable {
    pub ids: Vec<u32>,
    pub texts: Vec<String>,
    /// Character range `[start, end)` of each position in `text`, `null`
    /// for tokens the input adds.
    pub offsets: Vec<Option<(usize, usize)>>,
    /// Sentence index of each position, `null` for the start token.
    pub sentence_ids: Vec<Option<usize>>,
    /// Positions that are no content (start, separator, padding, a
    /// decoder's BOS), ascending.
    pub special_positions: Vec<usize>,
    /// Positions of the separators, ascending: the `[SEP]`s of an encoder,
    /// each sentence's last token for a decoder (ANALYSIS.md §8).
    pub separator_positions: Vec<usize>,
    /// Id of the start token (`[CLS]`, `<s>`), if the input has one.
    #[serde(default)]
    pub start_id: Option<u32>,
    /// Id of the separator token of an encoder (`[SEP]`, `</s>`).
    #[serde(default)]
    pub separator_id: Option<u32>,
}

impl Header {
    /// Whether `other` is a capture of the same model: its name and type,
    /// its layers, heads and head dimension, and causal or not.
    pub fn same_model(&self, other: &Header) -> bool {
        self.model == other.model
            && (self.layers, self.heads, self.head_dim, self.causal)
                == (other.layers, other.heads, other.head_dim, other.causal)
    }

    /// The model, as messages name it: `all-MiniLM-L6-v2 (bert, 6 layers
    /// × 12 heads of dimension 32)`.
    pub fn model_description(&self) -> String {
        format!(
            "{} ({}, {} layers × {} heads of dimension {}{})",
            self.model.name,
            self.model.kind,
            self.layers,
            self.heads,
            self.head_dim,
            if self.causal { ", causal" } else { "" }
        )
    }
}
