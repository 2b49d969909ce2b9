//! The window's own file dialog, for desktops without one (see
//! [`super::dialogs`]): a folder's entries, folders first (named with a
//! trailing "/", in the default fonts' own characters), and only the file
//! types asked for; a name field that Open (or Save) and Enter both take,
//! as a name in the folder shown or a whole path; Up, a path field, Cancel
//! and Escape.
//!
//! A click on an entry puts its name in the field; a double click opens a
//! folder or chooses a file. Choosing a folder ([`Choose::Folder`]) takes
//! the folder named in the field, else the one shown; files of the types
//! asked for (a model's GGUF) may be chosen there too.

use std::path::{Path, PathBuf};

/// What a dialog asks the user to choose (the platform's or this one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choose {
    /// An existing file.
    File,
    /// An existing folder.
    Folder,
    /// Where to save, suggesting this file name.
    SaveAs(String),
}

/// The label of the button that takes the name in the field (Save for a
/// save dialog).
pub const OPEN_LABEL: &str = "Open";
/// The save dialog's button.
pub const SAVE_LABEL: &str = "Save";
/// The label of the name field.
pub const NAME_LABEL: &str = "Name";

/// One entry of the folder shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub is_dir: bool,
}

impl Entry {
    /// What the list shows: a folder's name ends with "/".
    pub fn label(&self) -> String {
        if self.is_dir {
            format!("{}/", self.name)
        } else {
            self.name.clone()
        }
    }
}

/// What became of the dialog this frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Open,
    Chosen(PathBuf),
    Cancelled,
}

/// The in-app dialog's state.
pub struct Browser {
    title: String,
    choose: Choose,
    /// The file extensions listed (lower case); empty: every file.
    extensions: Vec<String>,
    folder: PathBuf,
    /// The path field's text.
    path_text: String,
    /// The name field's text.
    name: String,
    entries: Result<Vec<Entry>, String>,
    /// Why the last Open did nothing.
    problem: Option<String>,
}

impl Browser {
    /// A dialog that asks `choose`, listing the files of `extensions`
    /// (every file when empty or when one is "*"), in `start` (else the
    /// working folder).
    pub fn new(title: &str, choose: Choose, extensions: &[String], start: Option<&Path>) -> Self {
        let extensions = if extensions.iter().any(|e| e == "*") {
            Vec::new()
        } else {
            extensions.iter().map(|e| e.to_lowercase()).collect()
        };
        let name = match &choose {
            Choose::SaveAs(name) => name.clone(),
            _ => String::new(),
        };
        let folder = start
            .map(Path::to_path_buf)
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("/"));
        let mut browser = Self {
            title: title.to_string(),
            choose,
            extensions,
            folder: PathBuf::new(),
            path_text: String::new(),
            name,
            entries: Ok(Vec::new()),
            problem: None,
        };
        browser.go_to(folder);
        browser
    }

    /// The folder shown.
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    /// The entries listed.
    pub fn entries(&self) -> &[Entry] {
        self.entries.as_deref().unwrap_or_default()
    }

    fn go_to(&mut self, folder: PathBuf) {
        self.entries = list(&folder, &self.choose, &self.extensions);
        self.path_text = folder.display().to_string();
        self.folder = folder;
        self.problem = None;
    }

    /// Whether the file at `path` is of a type listed.
    fn listed(&self, path: &Path) -> bool {
        listed(path, &self.extensions)
    }

    /// What Open (or Enter) does with the name in the field.
    pub fn open_typed(&mut self) -> Option<PathBuf> {
        let typed = self.name.trim();
        if typed.is_empty() {
            return match self.choose {
                Choose::Folder => Some(self.folder.clone()),
                _ => {
                    self.problem = Some("Type or pick a name first.".into());
                    None
                }
            };
        }
        let path = self.folder.join(typed);
        match &self.choose {
            Choose::Folder if path.is_dir() => Some(path),
            Choose::Folder | Choose::File if path.is_file() && self.listed(&path) => Some(path),
            _ if path.is_dir() => {
                self.go_to(path);
                self.name.clear();
                None
            }
            Choose::SaveAs(_) if path.parent().is_some_and(Path::is_dir) => Some(path),
            _ => {
                self.problem = Some(format!("{} is not here.", path.display()));
                None
            }
        }
    }

    /// A double click on `entry`: into a folder, or the file chosen.
    fn open_entry(&mut self, entry: &Entry) -> Option<PathBuf> {
        let path = self.folder.join(&entry.name);
        if entry.is_dir {
            self.go_to(path);
            if !matches!(self.choose, Choose::SaveAs(_)) {
                self.name.clear();
            }
            None
        } else {
            Some(path)
        }
    }

    /// Draws the dialog; its answer once it is closed.
    pub fn show(&mut self, ctx: &egui::Context) -> Answer {
        let mut answer = Answer::Open;
        let mut open = true;
        egui::Window::new(egui::RichText::new(&self.title).strong())
            .id(egui::Id::unique("headscope file dialog"))
            .open(&mut open)
            .collapsible(false)
            .default_size(egui::vec2(560.0, 440.0))
            .show(ctx, |ui| {
                ui.ctx().move_to_top(ui.layer_id());
                if let Some(done) = self.contents(ui) {
                    answer = done;
                }
            });
        if !open || ctx.input(|i| i.key_pressed(egui::Key::Escape)) {
            answer = Answer::Cancelled;
        }
        answer
    }

    fn contents(&mut self, ui: &mut egui::Ui) -> Option<Answer> {
        let mut chosen = None;
        ui.horizontal(|ui| {
            let up = self.folder.parent().map(Path::to_path_buf);
            if ui
                .add_enabled(up.is_some(), egui::Button::new("Up"))
                .on_hover_text("The folder above")
                .clicked()
            {
                if let Some(up) = up {
                    self.go_to(up);
                }
            }
            let field = ui.add(
                egui::TextEdit::singleline(&mut self.path_text)
                    .desired_width(f32::INFINITY)
                    .hint_text("a folder"),
            );
            if field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
                let typed = PathBuf::from(self.path_text.trim());
                if typed.is_dir() {
                    self.go_to(typed);
                } else {
                    self.problem = Some(format!("{} is not a folder.", typed.display()));
                }
            }
        });
        ui.separator();
        let bottom = 3.0 * ui.spacing().interact_size.y + 4.0 * ui.spacing().item_spacing.y;
        egui::ScrollArea::vertical()
            .max_height((ui.available_height() - bottom).max(80.0))
            .auto_shrink([false, false])
            .show(ui, |ui| match &self.entries {
                Err(message) => {
                    ui.colored_label(ui.visuals().error_fg_color, message.clone());
                }
                Ok(entries) if entries.is_empty() => {
                    ui.weak(match self.choose {
                        Choose::Folder if self.extensions.is_empty() => "No folders here.",
                        Choose::Folder => "No folders or files of the kind asked for here.",
                        _ => "No folders or files of the kind asked for here.",
                    });
                }
                Ok(entries) => {
                    let mut double = None;
                    for entry in entries {
                        let selected = self.name == entry.name;
                        let response = ui.add(
                            egui::Button::selectable(selected, entry.label())
                                .min_size(egui::vec2(ui.available_width(), 0.0)),
                        );
                        if response.clicked() {
                            self.name = entry.name.clone();
                            self.problem = None;
                        }
                        if response.double_clicked() {
                            double = Some(entry.clone());
                        }
                    }
                    if let Some(entry) = double {
                        chosen = self.open_entry(&entry);
                    }
                }
            });
        ui.separator();
        ui.horizontal(|ui| {
            let label = ui.label(match self.choose {
                Choose::Folder => "Folder or file:",
                _ => "File name:",
            });
            let field = ui
                .add(
                    egui::TextEdit::singleline(&mut self.name)
                        .desired_width(f32::INFINITY)
                        .hint_text(match self.choose {
                            Choose::Folder => "empty: the folder shown",
                            _ => "a name in this folder, or a whole path",
                        }),
                )
                .labelled_by(label.id);
            if field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
                chosen = chosen.take().or_else(|| self.open_typed());
            }
        });
        if let Some(problem) = &self.problem {
            ui.colored_label(ui.visuals().warn_fg_color, problem);
        }
        let mut cancelled = false;
        ui.horizontal(|ui| {
            let button = match self.choose {
                Choose::SaveAs(_) => SAVE_LABEL,
                _ => OPEN_LABEL,
            };
            if ui.button(button).clicked() {
                chosen = chosen.take().or_else(|| self.open_typed());
            }
            if ui.button("Cancel").clicked() {
                cancelled = true;
            }
        });
        if cancelled {
            return Some(Answer::Cancelled);
        }
        chosen.map(Answer::Chosen)
    }
}

/// Whether `path` has one of `extensions` (any file when there are none).
fn listed(path: &Path, extensions: &[String]) -> bool {
    extensions.is_empty()
        || path
            .extension()
            .is_some_and(|e| extensions.iter().any(|x| e.eq_ignore_ascii_case(x)))
}

/// The entries of `folder` a dialog asking `choose` lists: its folders,
/// then its files of `extensions` (for a folder: only when some are
/// asked for), hidden ones left out, each sorted by name.
pub fn list(folder: &Path, choose: &Choose, extensions: &[String]) -> Result<Vec<Entry>, String> {
    let read = std::fs::read_dir(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    let files_wanted = !matches!(choose, Choose::Folder) || !extensions.is_empty();
    let mut folders = Vec::new();
    let mut files = Vec::new();
    for entry in read.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            folders.push(Entry { name, is_dir: true });
        } else if files_wanted && listed(&path, extensions) {
            files.push(Entry {
                name,
                is_dir: false,
            });
        }
    }
    let key = |e: &Entry| e.name.to_lowercase();
    folders.sort_by_key(key);
    files.sort_by_key(key);
    folders.extend(files);
    Ok(folders)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("model-a")).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        std::fs::write(dir.path().join("small.gguf"), "x").unwrap();
        std::fs::write(dir.path().join("figures.npz"), "x").unwrap();
        std::fs::write(dir.path().join(".hidden"), "x").unwrap();
        dir
    }

    fn labels(entries: &[Entry]) -> Vec<String> {
        entries.iter().map(Entry::label).collect()
    }

    #[test]
    fn a_model_dialog_lists_folders_and_gguf_files_only() {
        let dir = folder();
        let gguf = vec!["gguf".to_string()];
        let entries = list(dir.path(), &Choose::Folder, &gguf).unwrap();
        assert_eq!(labels(&entries), ["model-a/", "small.gguf"]);
        let entries = list(dir.path(), &Choose::Folder, &[]).unwrap();
        assert_eq!(labels(&entries), ["model-a/"]);
        let text = vec!["txt".to_string()];
        let entries = list(dir.path(), &Choose::File, &text).unwrap();
        assert_eq!(labels(&entries), ["model-a/", "notes.txt"]);
    }

    #[test]
    fn open_takes_the_typed_name() {
        let dir = folder();
        let text = vec!["txt".to_string()];
        let mut browser = Browser::new("Open", Choose::File, &text, Some(dir.path()));
        browser.name = "notes.txt".into();
        assert_eq!(browser.open_typed(), Some(dir.path().join("notes.txt")));
        // A folder's name goes into it.
        browser.name = "model-a".into();
        assert_eq!(browser.open_typed(), None);
        assert_eq!(browser.folder(), dir.path().join("model-a"));
        // A name not there says so.
        browser.name = "missing.txt".into();
        assert_eq!(browser.open_typed(), None);
        assert!(browser.problem.is_some());

        let mut folders = Browser::new("Model", Choose::Folder, &[], Some(dir.path()));
        assert_eq!(folders.open_typed(), Some(dir.path().to_path_buf()));
        folders.name = "model-a".into();
        assert_eq!(folders.open_typed(), Some(dir.path().join("model-a")));

        let mut save = Browser::new(
            "Save",
            Choose::SaveAs("a.json".into()),
            &[],
            Some(dir.path()),
        );
        assert_eq!(save.open_typed(), Some(dir.path().join("a.json")));
    }
}
