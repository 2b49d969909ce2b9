//! The user's choices that survive a restart (the panel that edits them is
//! [`super::panels::settings`]).
//!
//! [`Settings`] holds every option of ANALYSIS.md (input mode, selection
//! rule with its q / z / k, similarity variant, local window w) and the view
//! choices (matrix, colour map, scale, the tab shown). It is plain serde data
//! stored through eframe's storage, kept apart from the runtime state in
//! [`super::HeadscopeApp`], and the bottom of the app's layering: every part
//! of the app may read it, it reads none of them. The parameters of the
//! rules not in use are kept too, so switching rules back and forth does not
//! lose a value the user typed.

use crate::analysis::{AnalysisOptions, Selection, SimilarityVariant};
use crate::colormap::{ColorMap, RangeRule};
use crate::input::InputMode;
use serde::{Deserialize, Serialize};

/// Which of the selection rules of ANALYSIS.md §3 is in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum SelectionRule {
    #[default]
    TopFraction,
    AboveMean,
    TopKPerRow,
}

/// What the Heads grid's captions name: the study's category of each head
/// (ANALYSIS.md §4) or the classic role its attention plays (§9), on the
/// text or on the induction probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum GridCaptions {
    #[default]
    Category,
    Role,
    ProbeRole,
}

/// Which per-head matrix the heatmaps show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum MatrixKind {
    /// The context similarity S (after the chosen variant).
    #[default]
    Similarity,
    /// The attention probabilities P.
    Attention,
    /// P weighted by the size of what each key writes through the head,
    /// rows summing to 1: N′ of ANALYSIS.md §9.
    ValueWeighted,
}

impl MatrixKind {
    pub fn label(self) -> &'static str {
        match self {
            MatrixKind::Similarity => "Similarity",
            MatrixKind::Attention => "Attention",
            MatrixKind::ValueWeighted => "Value-weighted",
        }
    }

    /// Whether it is a head's attention, plain or value-weighted: rows are
    /// queries, columns keys.
    pub fn is_attention(self) -> bool {
        self != MatrixKind::Similarity
    }

    /// What it is, in a caption or a file name.
    pub fn name(self) -> &'static str {
        match self {
            MatrixKind::Similarity => "similarity",
            MatrixKind::Attention => "attention",
            MatrixKind::ValueWeighted => "value-weighted attention",
        }
    }

    /// The matrix's symbol (ANALYSIS.md §2, §9).
    pub fn symbol(self) -> &'static str {
        match self {
            MatrixKind::Similarity => "S",
            MatrixKind::Attention => "P",
            MatrixKind::ValueWeighted => "N′",
        }
    }
}

/// What the central area shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum CentralView {
    /// Every head's heatmap, or one head up close.
    #[default]
    Heads,
    /// The inter-layer comparison.
    Layers,
    /// Attention to the separators and the segmentation it implies.
    Separators,
    /// Each head's similarity row for picked tokens, and the focus tokens.
    TokenFocus,
    /// The table of every head's figures.
    Specialisation,
    /// A second model on the same text, and how its heads compare.
    Compare,
    /// A decoder's tokens one step at a time: every head's rows of one.
    Steps,
    /// A decoder's predictions layer by layer (the logit lens).
    LogitLens,
}

impl CentralView {
    pub const ALL: [CentralView; 8] = [
        CentralView::Heads,
        CentralView::Layers,
        CentralView::Separators,
        CentralView::TokenFocus,
        CentralView::Specialisation,
        CentralView::Compare,
        CentralView::Steps,
        CentralView::LogitLens,
    ];

    /// The tab's title (also its accessible name).
    pub fn label(self) -> &'static str {
        match self {
            CentralView::Heads => "Heads",
            CentralView::Layers => "Layers",
            CentralView::Separators => "Separators",
            CentralView::TokenFocus => "Token focus",
            CentralView::Specialisation => "Specialisation",
            CentralView::Compare => "Compare",
            CentralView::Steps => "Steps",
            CentralView::LogitLens => "Logit lens",
        }
    }

    /// What the tab shows, for its tooltip.
    pub fn hint(self) -> &'static str {
        match self {
            CentralView::Heads => "Every head's heatmap; click one to open it",
            CentralView::Layers => {
                "How the strongly similar pairs change with depth: distances, fractions, \
                 layer-to-layer correlation"
            }
            CentralView::Separators => {
                "Attention to [SEP] per head and per token, and the sentences it recovers"
            }
            CentralView::TokenFocus => {
                "Pick tokens in the text and see each head's similarity row for them"
            }
            CentralView::Specialisation => {
                "Every head's figures and attention statistics, sortable and filterable"
            }
            CentralView::Compare => {
                "A second model on the same text: per-layer curves, heads side by side, \
                 heads matched by CKA"
            }
            CentralView::Steps => {
                "Step through a generation: every head's attention and similarity row of \
                 one token, on the grid and over the text"
            }
            CentralView::LogitLens => {
                "A decoder's next-token prediction after each layer, at every position"
            }
        }
    }
}

/// The accessible names of the window limits in the settings panel.
pub const TOKEN_LIMIT_LABEL: &str = "Token limit";
pub const MEMORY_LIMIT_LABEL: &str = "Memory limit";

/// Everything the user set, persisted between sessions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub input_mode: InputMode,
    pub rule: SelectionRule,
    /// q of the top-fraction rule, as a fraction (0.01 = 1 %).
    pub q: f64,
    /// z of the above-mean rule.
    pub z: f64,
    /// k of the top-k-per-row rule.
    pub k: usize,
    pub similarity: SimilarityVariant,
    /// w of the local fraction.
    pub local_window: usize,
    pub matrix: MatrixKind,
    pub colormap: ColorMap,
    /// One colour range for all thumbnails instead of one per head.
    pub shared_scale: bool,
    /// Which values set a picture's colour range.
    pub colour_range: RangeRule,
    /// Leave a causal model's first token (its sink) out of the range.
    pub scale_without_first_token: bool,
    /// Colour attention on a log scale.
    pub log_attention: bool,
    /// Outline the selected pairs on the large heatmap.
    pub mark_pairs: bool,
    /// What a pixel of a long input's zoomed-out map shows of its block.
    pub map_reduction: crate::head_map::BlockReduction,
    /// Show the text panel on the left.
    pub show_text_panel: bool,
    /// The tab the central area shows.
    pub view: CentralView,
    /// Draw each head's separator attention on its grid thumbnail.
    pub separator_overlay: bool,
    /// What the grid's captions name.
    pub grid_captions: GridCaptions,
    /// At most this many tokens per window; 0: the model's own limit.
    pub max_tokens: usize,
    /// At most this much memory (MB) for one window's attentions and
    /// similarities; a longer text is cut to fit.
    pub capture_memory_mb: u64,
    /// The printed size of exported figures (SVG, PDF, PNG).
    pub figure_style: crate::export::FigureStyle,
}

impl Default for Settings {
    fn default() -> Self {
        let analysis = AnalysisOptions::default();
        Self {
            input_mode: InputMode::default(),
            rule: SelectionRule::TopFraction,
            q: Selection::DEFAULT_Q,
            z: Selection::DEFAULT_Z,
            k: Selection::DEFAULT_K,
            similarity: analysis.similarity,
            local_window: analysis.local_window,
            matrix: MatrixKind::default(),
            colormap: ColorMap::default(),
            shared_scale: false,
            colour_range: RangeRule::default(),
            scale_without_first_token: true,
            log_attention: false,
            mark_pairs: true,
            map_reduction: Default::default(),
            show_text_panel: true,
            view: CentralView::default(),
            separator_overlay: false,
            grid_captions: GridCaptions::default(),
            max_tokens: 0,
            capture_memory_mb: crate::pipeline::DEFAULT_CAPTURE_MEMORY_MB,
            figure_style: crate::export::FigureStyle::default(),
        }
    }
}

impl Settings {
    /// The analysis options these settings stand for.
    pub fn analysis_options(&self) -> AnalysisOptions {
        let selection = match self.rule {
            SelectionRule::TopFraction => Selection::TopFraction { q: self.q },
            SelectionRule::AboveMean => Selection::AboveMean { z: self.z },
            SelectionRule::TopKPerRow => Selection::TopKPerRow { k: self.k },
        };
        AnalysisOptions {
            selection,
            similarity: self.similarity,
            local_window: self.local_window,
        }
    }

    /// The window's limits these settings stand for, on top of the mode
    /// and the first sentence.
    pub fn input_options(
        &self,
        start: impl Into<crate::input::WindowStart>,
    ) -> crate::pipeline::InputOptions {
        let start = start.into();
        crate::pipeline::InputOptions {
            mode: self.input_mode,
            first_sentence: start.sentence,
            first_piece: start.piece,
            max_tokens: (self.max_tokens > 0).then_some(self.max_tokens),
            capture_memory_mb: Some(self.capture_memory_mb.max(1)),
            keep_residuals: true,
            keep_thumbnails: true,
        }
    }

    /// How the corpus window runs its documents: as one text is run
    /// (each head's importance is the window's own choice).
    pub fn corpus_options(&self) -> crate::corpus::CorpusOptions {
        let input = self.input_options(0);
        crate::corpus::CorpusOptions {
            mode: input.mode,
            analysis: self.analysis_options(),
            limits: crate::corpus::WindowLimits {
                max_tokens: input.max_tokens,
                capture_memory_mb: input.capture_memory_mb,
            },
            importance: None,
        }
    }

    /// Puts the analysis options back to ANALYSIS.md's defaults (view
    /// choices stay).
    pub fn reset_analysis(&mut self) {
        let defaults = Settings::default();
        self.input_mode = defaults.input_mode;
        self.max_tokens = defaults.max_tokens;
        self.capture_memory_mb = defaults.capture_memory_mb;
        self.rule = defaults.rule;
        self.q = defaults.q;
        self.z = defaults.z;
        self.k = defaults.k;
        self.similarity = defaults.similarity;
        self.local_window = defaults.local_window;
    }
}
