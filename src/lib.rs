//! headscope: see what a transformer's attention heads output.
//!
//! The crate is layered so that dependencies flow one way:
//!
//! - [`tokens`], [`captures`], [`analysis`], [`colormap`], [`export`], [`npz`],
//!   [`atomic_file`]: pure data and computation, no GUI and no tensor
//!   library; [`threads`], the one budget of compute threads they and the
//!   model share.
//! - [`comparison`]: two models on one text, aligned by character offsets,
//!   their heads matched by CKA (pure, like [`analysis`]).
//! - [`input`]: turns text into the model's token sequence (ANALYSIS.md §1).
//! - [`model`]: loads a BERT checkpoint and runs our own encoder, capturing
//!   every head's attention and output (ANALYSIS.md §2).
//! - [`pipeline`]: text → tokens → captures → figures, the one path shared by
//!   the CLI, the worker and the tests.
//! - [`worker`]: the background thread the app talks to through channels.
//! - [`app`]: the egui desktop app; [`cli`]: the command line.

pub mod analysis;
pub mod app;
pub mod atomic_file;
pub mod bench;
pub mod captures;
pub mod cli;
pub mod colormap;
pub mod comparison;
pub mod corpus;
pub mod corpus_stats;
pub mod export;
pub mod input;
pub mod model;
pub mod npz;
pub mod pipeline;
pub mod textfile;
pub mod threads;
pub mod tokens;
pub mod worker;
