//! The panels that edit what the analyses run on: the model in use and the
//! loads asked of the worker ([`model`], also model B's in Compare), the
//! analysis settings ([`settings`]), and the outline of a long document
//! with find, which moves the window ([`outline`]).

pub mod found_models;
pub mod model;
pub mod outline;
pub mod settings;
