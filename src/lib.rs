//! headscope: see what a transformer's attention heads output.
//!
//! The crate is layered so that dependencies flow one way, top to bottom
//! (`tests/layering.rs` reads every `use` of `src/` and checks it: no
//! import circle, no module importing one above it, no view importing
//! another view):
//!
//! - [`cli`]: the command line, a file per command; it opens the [`app`].
//! - [`app`]: the egui desktop app: its shell (layout, menus, status bar,
//!   notices), the corpus window, the study's views (one `View` trait, a
//!   context handed to each, a registry), the text, the panels, the files,
//!   the widgets every view draws with, and the persisted settings.
//! - [`worker`]: the background thread the app talks to through channels.
//! - [`corpus`]: a corpus's documents, shards and report, run through the
//!   pipeline; [`capture_file`]: a run stored as a file (from Python, say)
//!   and analysed without the model.
//! - [`pipeline`]: text → tokens → captures → figures, the one path shared by
//!   the CLI, the worker and the tests.
//! - [`model`]: loads a checkpoint and runs our own encoder or decoder,
//!   capturing every head's attention and output (ANALYSIS.md §2);
//!   [`input`]: turns text into the model's token sequence (ANALYSIS.md §1),
//!   cutting a sentence longer than a window into pieces; [`probe`]: the
//!   induction probe's input (ANALYSIS.md §9); [`report`]: the
//!   JSON documents `analyze` and `compare` write (the figures, and what
//!   the input did to the text).
//! - [`export`], [`npz`]: figures and files out, the same for the CLI and
//!   the app.
//! - [`analysis`], [`comparison`] (two models on one text, heads matched by
//!   CKA), [`corpus_stats`], [`captures`], [`tokens`], [`predictions`]
//!   (next tokens from a decoder's logits: greedy, sampled, the logit
//!   lens' table): pure data and
//!   computation, no GUI and no tensor library; [`colormap`],
//!   [`atomic_file`], [`textfile`]; [`threads`], the one budget of compute
//!   threads they and the model share; [`kernels`], the CPU matrix and
//!   element-wise kernels the model's tuned path and the recomputation of
//!   P and S share (a leaf: it imports nothing of the crate).

pub mod analysis;
pub mod app;
pub mod atomic_file;
pub mod capture_file;
pub mod captures;
pub mod cli;
pub mod colormap;
pub mod comparison;
pub mod corpus;
pub mod corpus_stats;
pub mod export;
pub mod head_map;
pub mod input;
pub mod kernels;
pub mod model;
pub mod npz;
pub mod pipeline;
pub mod predictions;
pub mod probe;
pub mod report;
pub mod textfile;
pub mod threads;
pub mod tokens;
pub mod vector_store;
pub mod worker;
