//! The app's tests, driven through its accessibility tree under
//! egui_kittest (and one real window under Xvfb, `window`), in one test
//! binary: each GUI test binary links egui, wgpu and the whole library,
//! some 150 MB apiece, so one binary rather than fifteen keeps a clean
//! build's disk and link time small. `tests/app_models.rs` stays apart: it
//! points `HOME` and the cache at a scratch folder for its whole process.

#[path = "../common/mod.rs"]
mod common;

mod capture;
mod compare;
mod corpus;
mod decoders;
mod export;
mod families;
mod generate;
mod layout;
mod long_map;
mod long_text;
mod overlaps;
mod sizes;
mod ui;
mod views;
mod window;
