//! The panels that edit what the analyses run on: the model in use and the
//! loads asked of the worker ([`model`], also model B's in Compare), the
//! analysis settings ([`settings`]), the outline of a long document
//! with find, which moves the window ([`outline`]), and a decoder's
//! Generate panel ([`generate`]).

pub mod found_models;
pub mod generate;
pub mod model;
pub mod outline;
pub mod settings;
