//! No widget is drawn over another or outside its place: every tab of the
//! app and a head's detail (its heatmap and figures panel), with an
//! encoder (the test model) and with a decoder (the llama family fixture,
//! whose Steps and Logit lens tabs make the tab row longest), at 1280 × 720 and 1600 × 1000, with the outline open and
//! closed; and every window over the app (the File and View menus, the
//! Model window, the Corpus statistics window before and after a run) at
//! both sizes with both models. Sibling controls in the accessibility tree
//! — the buttons, boxes and fields one layout placed side by side — must
//! not overlap where they show, and no control may reach past its panel,
//! its window or the app's window, except where a scroll area scrolls it.
//! (A view's own columns drawn over each other are not siblings: look at
//! the pictures.) The windows are rendered into
//! `$CARGO_TARGET_TMPDIR/app_overlaps/` for a person to look at;
//! `HEADSCOPE_DUMP_TREE=1` (with `--nocapture`) prints the accessibility
//! tree of each window checked. Last, the list of named controls that
//! `scripts/screenshots.sh` clicks by (`HEADSCOPE_TRACE_WIDGETS`) places
//! them where the tree does.

use crate::common;

use common::app::*;
use egui::accesskit::Role;
use egui_kittest::kittest::{NodeT, Queryable};
use headscope::app::views::CentralView;
use headscope::captures::HeadId;
use std::path::PathBuf;

const SIZES: [egui::Vec2; 2] = [egui::vec2(1280.0, 720.0), egui::vec2(1600.0, 1000.0)];

/// The roles of the widgets a person clicks or types in.
fn is_control(role: Role) -> bool {
    matches!(
        role,
        Role::Button
            | Role::CheckBox
            | Role::RadioButton
            | Role::ComboBox
            | Role::TextInput
            | Role::MultilineTextInput
            | Role::SpinButton
            | Role::Slider
            | Role::Link
            | Role::Tab
    )
}

/// Every pair of sibling controls whose visible parts (within the window)
/// overlap by more than a hair. Only siblings are compared — the controls
/// one layout placed side by side — as what a scroll area has scrolled
/// away is laid out too, beyond what shows; text is left out, as egui
/// nests its rects.
fn layout_faults(harness: &AppHarness, size: egui::Vec2) -> Vec<String> {
    let window = egui::Rect::from_min_size(egui::Pos2::ZERO, size);
    let mut faults = Vec::new();
    let mut stack = vec![harness.root()];
    while let Some(node) = stack.pop() {
        let children: Vec<_> = node.children().collect();
        let controls: Vec<(String, egui::Rect)> = children
            .iter()
            .filter(|c| {
                is_control(c.accesskit_node().role()) && c.accesskit_node().bounding_box().is_some()
            })
            .filter_map(|c| {
                let visible = c.rect().intersect(window);
                (visible.width() > 0.5 && visible.height() > 0.5).then(|| {
                    let name = c.accesskit_node().label().unwrap_or_default();
                    (format!("{:?} “{name}”", c.accesskit_node().role()), visible)
                })
            })
            .collect();
        for (i, (a, ra)) in controls.iter().enumerate() {
            for (b, rb) in &controls[i + 1..] {
                let overlap = ra.intersect(*rb);
                if overlap.width() > 1.0 && overlap.height() > 1.0 {
                    faults.push(format!("{a} at {ra:?} overlaps {b} at {rb:?}"));
                }
            }
        }
        stack.extend(children);
    }
    faults
}

/// Every control that reaches past the region that holds it by more than
/// a hair: the app's window (for a menu or popup), an egui window over it
/// (which has a rect in the tree), or a panel (the app gives each its rect:
/// `widgets::pane::mark`). What a scroll area scrolls may reach past
/// in the way it scrolls: its content is a sibling of the scroll bar egui
/// shows whenever there is more than fits.
fn escape_faults(harness: &AppHarness, size: egui::Vec2) -> Vec<String> {
    let window = egui::Rect::from_min_size(egui::Pos2::ZERO, size);
    let mut faults = Vec::new();
    // (node, the region it must stay in, whether it may reach past it
    // sideways and downwards)
    let mut stack = vec![(harness.root(), window, [false, false])];
    while let Some((node, region, scrolls)) = stack.pop() {
        let info = node.accesskit_node();
        let has_rect = info.bounding_box().is_some();
        if is_control(info.role()) && has_rect {
            let rect = node.rect();
            let past_x = rect.left() < region.left() - 1.0 || rect.right() > region.right() + 1.0;
            let past_y = rect.top() < region.top() - 1.0 || rect.bottom() > region.bottom() + 1.0;
            if (past_x && !scrolls[0]) || (past_y && !scrolls[1]) {
                let name = info.label().unwrap_or_default();
                faults.push(format!(
                    "{:?} “{name}” at {rect:?} leaves its region {region:?}",
                    info.role()
                ));
            }
        }
        let region = match info.role() {
            // Popups open over the panels, anywhere in the app's window.
            Role::Menu | Role::Dialog | Role::Tooltip | Role::ListBox => window,
            Role::Window | Role::GenericContainer if has_rect => node.rect(),
            _ => region,
        };
        let children: Vec<_> = node.children().collect();
        let mut bars = [false, false];
        for bar in children
            .iter()
            .filter(|c| c.accesskit_node().role() == Role::ScrollBar)
        {
            let rect = bar.rect();
            bars[usize::from(rect.height() > rect.width())] = true;
        }
        for child in children {
            let child_scrolls = if child.accesskit_node().role() == Role::ScrollBar {
                scrolls
            } else {
                [scrolls[0] || bars[0], scrolls[1] || bars[1]]
            };
            // A region inside a scrolled one is scrolled with it.
            stack.push((child, region, child_scrolls));
        }
    }
    faults
}

fn picture_path(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("app_overlaps");
    std::fs::create_dir_all(&dir).expect("picture folder");
    dir.join(name)
}

/// Renders the window as `tag`, and its layout faults, tagged.
fn check_window(harness: &mut AppHarness, size: egui::Vec2, tag: &str) -> Vec<String> {
    for _ in 0..3 {
        harness.step();
    }
    let image = harness.render().expect("wgpu renders the window");
    image.save(picture_path(&format!("{tag}.png"))).unwrap();
    if std::env::var_os("HEADSCOPE_DUMP_TREE").is_some() {
        dump_tree(harness.root(), 0);
    }
    let faults = layout_faults(harness, size)
        .into_iter()
        .chain(escape_faults(harness, size));
    faults.map(|fault| format!("{tag}: {fault}")).collect()
}

/// Prints the accessibility tree below `node`: role, label and rect.
fn dump_tree(node: egui_kittest::Node<'_>, depth: usize) {
    let n = node.accesskit_node();
    let bounds = n.bounding_box().map(|_| format!("{:?}", node.rect()));
    println!(
        "{}{:?} {:?} {}",
        "  ".repeat(depth),
        n.role(),
        n.label().unwrap_or_default(),
        bounds.unwrap_or_default()
    );
    for child in node.children() {
        dump_tree(child, depth + 1);
    }
}

fn check_every_tab(model: String, file: Option<PathBuf>, what: &str) {
    let mut all = Vec::new();
    for size in SIZES {
        for outline in [false, true] {
            let mut harness = start_sized_with_outline(model.clone(), file.clone(), size, outline);
            let causal = harness.state().shown_output().unwrap().input.tokens.causal;
            for view in CentralView::ALL {
                if !causal && matches!(view, CentralView::Steps | CentralView::LogitLens) {
                    continue;
                }
                open_tab(&mut harness, view);
                let tag = format!(
                    "{what}-{}x{}{}-{}",
                    size.x,
                    size.y,
                    if outline { "-outline" } else { "" },
                    view.label()
                );
                all.extend(check_window(&mut harness, size, &tag));
            }
            // A head up close, by its thumbnail (the first: the grid may
            // have scrolled the last out of sight).
            open_tab(&mut harness, CentralView::Heads);
            let head = HeadId::new(0, 0);
            harness
                .get_by_label_contains(&format!("L{} H{} ", head.layer, head.head))
                .click();
            step_until(&mut harness, "the head detail", |h| {
                h.state().detail_head() == Some(head)
            });
            let tag = format!(
                "{what}-{}x{}{}-head detail",
                size.x,
                size.y,
                if outline { "-outline" } else { "" },
            );
            all.extend(check_window(&mut harness, size, &tag));
        }
    }
    assert!(all.is_empty(), "{} faults:\n{}", all.len(), all.join("\n"));
}

#[test]
fn no_widget_overlaps_another_with_an_encoder() {
    check_every_tab(model_arg(), None, "encoder");
}

#[test]
fn no_widget_overlaps_another_with_a_decoder() {
    check_every_tab(
        common::family_fixture("llama").display().to_string(),
        Some(common::fixture("families/llama.txt")),
        "decoder",
    );
}

/// A few short texts for the Corpus window to run on.
fn write_corpus(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    let sentences = [
        "The lighthouse keeper climbed the stairs before dawn.",
        "Fishing boats rocked gently against the wooden pier.",
        "She wrote the weather in a small leather notebook.",
        "Gulls circled above the nets that dried in the sun.",
    ];
    for f in 0..3 {
        let text: Vec<&str> = (0..3).map(|s| sentences[(f + s) % 4]).collect();
        std::fs::write(dir.join(format!("text{f}.txt")), text.join(" ")).unwrap();
    }
}

/// Opens `entry` of the menu `menu` in the menu bar.
fn choose_from_menu(harness: &mut AppHarness, menu: &str, entry: &str) {
    harness.get_by_label(menu).click();
    harness.step();
    harness.step();
    harness.get_by_label(entry).click();
    harness.step();
    harness.step();
}

/// Closes the one window open over the main one with its × button.
fn close_window(harness: &mut AppHarness) {
    harness
        .get_by(|n| n.role() == Role::Button && n.label().as_deref() == Some("Close window"))
        .click();
    harness.step();
    harness.step();
}

/// Clicks the button whose label starts with `label` (a menu entry's
/// label ends with its shortcut).
fn click_button_starting(harness: &mut AppHarness, label: &str) {
    harness
        .get_by(|n| n.role() == Role::Button && n.label().is_some_and(|l| l.starts_with(label)))
        .click();
    harness.step();
    harness.step();
}

/// Whether a button labelled `label` shows.
fn has_button(harness: &AppHarness, label: &str) -> bool {
    harness
        .query_by(|n| n.role() == Role::Button && n.label().as_deref() == Some(label))
        .is_some()
}

/// The windows over the main one, one at a time, at both sizes: the File
/// and View menus, the Model window (File → Choose model…), the Corpus
/// statistics window before a run and with its report, the in-app file
/// dialog (Open text file…, and Save text as… with its name field), and
/// the Model B window of the Compare tab (with the same model as B). (The
/// analysis settings and a decoder's Generate panel sit in the text panel,
/// which every tab above shows.)
fn check_every_window(model: String, file: Option<PathBuf>, what: &str) {
    use headscope::app::corpus::{FOLDER_LABEL, MENU_LABEL, RUN_LABEL};
    // The desktop's dialogs are not the app's to lay out.
    headscope::app::files::dialogs::use_in_app_dialogs();
    let scratch = tempfile::tempdir().unwrap();
    let corpus = scratch.path().join("corpus");
    write_corpus(&corpus);
    let mut all = Vec::new();
    for size in SIZES {
        let mut harness = start_sized_with_outline(model.clone(), file.clone(), size, false);
        let tag = |name: &str| format!("{what}-{}x{}-{name}", size.x, size.y);

        for menu in ["File", "View"] {
            harness.get_by_label(menu).click();
            harness.step();
            all.extend(check_window(
                &mut harness,
                size,
                &tag(&format!("{menu} menu")),
            ));
            harness.key_press(egui::Key::Escape);
            harness.step();
        }

        open_model_panel(&mut harness);
        all.extend(check_window(&mut harness, size, &tag("Model window")));
        close_window(&mut harness);

        choose_from_menu(&mut harness, "File", MENU_LABEL);
        all.extend(check_window(&mut harness, size, &tag("Corpus window")));
        harness.get_by_label(FOLDER_LABEL).focus();
        harness.step();
        harness
            .get_by_label(FOLDER_LABEL)
            .type_text(&corpus.display().to_string());
        harness.step();
        harness.get_by_label(RUN_LABEL).click();
        harness.step();
        // (An error ends the wait too, to be reported at once.)
        step_until(&mut harness, "the corpus run", |h| {
            let corpus = h.state().corpus_view();
            !corpus.is_running() && (corpus.report().is_some() || corpus.error().is_some())
        });
        assert_eq!(
            harness.state().corpus_view().error(),
            None,
            "{what}: the corpus run"
        );
        all.extend(check_window(&mut harness, size, &tag("Corpus report")));
        close_window(&mut harness);

        for (entry, name) in [
            ("Open text file…", "Open dialog"),
            ("Save text as…", "Save dialog"),
        ] {
            harness.get_by_label("File").click();
            harness.step();
            harness.step();
            click_button_starting(&mut harness, entry);
            step_until(&mut harness, "the file dialog", |h| has_button(h, "Cancel"));
            all.extend(check_window(&mut harness, size, &tag(name)));
            click_button_starting(&mut harness, "Cancel");
        }

        open_tab(&mut harness, CentralView::Compare);
        load_model_b(&mut harness, &model);
        step_until(&mut harness, "the comparison", |h| {
            let compare = h.state().compare_view();
            (compare.shown().is_some() && !compare.is_working()) || compare.error().is_some()
        });
        assert_eq!(
            harness.state().compare_view().error(),
            None,
            "{what}: model B"
        );
        click_button_starting(&mut harness, "Change model B…");
        all.extend(check_window(&mut harness, size, &tag("Model B window")));
    }
    assert!(all.is_empty(), "{} faults:\n{}", all.len(), all.join("\n"));
}

#[test]
fn no_widget_overlaps_another_in_a_window_with_an_encoder() {
    check_every_window(model_arg(), None, "encoder");
}

#[test]
fn no_widget_overlaps_another_in_a_window_with_a_decoder() {
    check_every_window(
        common::family_fixture("llama").display().to_string(),
        Some(common::fixture("families/llama.txt")),
        "decoder",
    );
}

/// The widget trace names the controls as the accessibility tree does, at
/// their centres, and follows the window (a menu opened shows its entries).
#[test]
fn the_widget_trace_lists_the_controls_where_they_are() {
    use headscope::app::shell::chrome::WidgetTrace;
    use headscope::app::{AppConfig, HeadscopeApp, StartOptions};
    let scratch = tempfile::tempdir().unwrap();
    let list = scratch.path().join("widgets.tsv");
    let config = AppConfig {
        start: StartOptions {
            model: Some(model_arg()),
            file: None,
        },
        autosave_path: None,
        restore_text: false,
    };
    let trace_path = list.clone();
    let mut harness = egui_kittest::Harness::builder()
        .with_size(SIZES[0])
        .build_eframe(move |cc| {
            WidgetTrace::install(&cc.egui_ctx, trace_path);
            HeadscopeApp::new(cc, config).expect("the app starts")
        });
    wait_for_result(&mut harness);
    let centre_in_list = |name: &str| -> Option<egui::Pos2> {
        std::fs::read_to_string(&list)
            .ok()?
            .lines()
            .find_map(|line| {
                let mut fields = line.split('\t');
                (fields.next()? == name).then_some(())?;
                let x = fields.next()?.parse().ok()?;
                let y = fields.next()?.parse().ok()?;
                Some(egui::pos2(x, y))
            })
    };
    for name in ["File", "Heads", "Layers", "Token limit"] {
        let centre = harness.get_by_label(name).rect().center();
        let listed = centre_in_list(name).unwrap_or_else(|| panic!("{name} is not listed"));
        assert!(
            (listed - centre).length() <= 1.0,
            "{name}: {listed:?} against {centre:?}"
        );
    }
    assert_eq!(centre_in_list(headscope::app::corpus::MENU_LABEL), None);
    harness.get_by_label("File").click();
    harness.step();
    harness.step();
    assert!(centre_in_list(headscope::app::corpus::MENU_LABEL).is_some());
}
