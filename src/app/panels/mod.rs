//! The panels that edit what the analyses run on: the model in use and the
//! loads asked of the worker ([`model`], also model B's in Compare), and
//! the analysis settings ([`settings`]).

pub mod found_models;
pub mod model;
pub mod settings;
