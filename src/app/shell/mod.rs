//! The app's shell: the window around the views, and everything that acts
//! on the app as a whole. These modules hold the `impl HeadscopeApp`
//! blocks beside `app/mod.rs` (which never imports them: it calls their
//! methods), and the shell's own pieces:
//!
//! - [`layout`]: the panels of one frame; [`central`]: the central area,
//!   its banners, the tab row and what the views ask for; [`menus`]: the
//!   menu bar, shortcuts and dropped files; [`text_panel`]: the editor and
//!   the analysis settings on the left; [`outline`]: the outline of the
//!   document and find on the right;
//! - [`status_bar`], [`notice`] (the message banner), [`chrome`] (the
//!   window title and the trace for scripts);
//! - [`startup`]: the first model and text, and what is left for the next
//!   session; [`worker`]: what the app asks of the model thread and what it
//!   does with the answers; [`saving`]: what the app does with the files
//!   the user picks.

pub mod central;
pub mod chrome;
pub mod layout;
pub mod menus;
pub mod notice;
pub mod outline;
pub mod saving;
pub mod startup;
pub mod status_bar;
pub mod text_panel;
pub mod worker;
