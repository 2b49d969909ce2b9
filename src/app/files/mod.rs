//! Files from and to the window: the platform's file dialogs run off the
//! UI thread ([`dialogs`]), File → Export of the result on screen
//! ([`export_menu`]), and a figure of a view saved as PNG, SVG or PDF from
//! the shapes it drew on screen ([`plot_export`]). What the app does with a chosen path is the shell's
//! ([`super::shell`]).

pub mod browser;
pub mod dialogs;
pub mod export_menu;
pub mod plot_export;
