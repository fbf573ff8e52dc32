//! The layout's rules: one shape for every verb, the environment and the wall clock read only
//! at the edge, the command line apart from the verbs, and functions short enough to hold in
//! one's head.

use syn::spanned::Spanned;
use syn::visit::Visit;

use super::{root, rust_files};

/// `src/`-relative paths of the Rust files under `src/`, with their text.
fn sources() -> Vec<(String, String)> {
    rust_files(&root().join("src"))
        .into_iter()
        .map(|file| {
            let relative = file.strip_prefix(root()).unwrap().display().to_string();
            (relative, std::fs::read_to_string(&file).unwrap())
        })
        .collect()
}

/// Lines of code (comments stripped) that contain any of `needles`, outside the files that
/// `allowed` accepts, as `file:line: text`.
fn uses_outside(needles: &[&str], allowed: impl Fn(&str) -> bool) -> Vec<String> {
    let mut hits = Vec::new();
    for (relative, text) in sources() {
        if allowed(&relative) {
            continue;
        }
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if needles.iter().any(|n| code.contains(n)) {
                hits.push(format!("{relative}:{}: {}", number + 1, line.trim()));
            }
        }
    }
    hits
}

fn at_the_edge(relative: &str) -> bool {
    relative == "src/main.rs" || relative.starts_with("src/commands/")
}

/// Environment variables are read into `Settings` once, at the edge; everything below is
/// handed its configuration, so a variable and its meaning are in one table.
#[test]
fn only_the_edge_reads_the_environment() {
    let needles = ["env::var", "env::vars", "env::set_var", "env::remove_var"];
    let hits = uses_outside(&needles, |f| f == "src/settings.rs" || at_the_edge(f));
    assert!(
        hits.is_empty(),
        "environment read below the edge: {hits:#?}"
    );
}

/// "Now" is a value handed down: only the edge makes the system clock, and only the clock
/// (plus the two places that time their own files and log lines) asks the system for it.
#[test]
fn only_the_edge_reads_the_wall_clock() {
    let hits = uses_outside(&["Clock::system("], |f| {
        at_the_edge(f) || f == "src/plumbing/clock.rs"
    });
    assert!(hits.is_empty(), "Clock::system below the edge: {hits:#?}");
    // The log's timestamps and the tile cache's age are about the machine, not the fleet.
    let allowed = [
        "src/plumbing/clock.rs",
        "src/plumbing/log.rs",
        "src/map/tiles.rs",
    ];
    let hits = uses_outside(&["SystemTime::now", "Utc::now", "Local::now"], |f| {
        allowed.contains(&f)
    });
    assert!(
        hits.is_empty(),
        "wall clock read outside the clock: {hits:#?}"
    );
}

/// Every verb file has the one signature `main` dispatches to, and `main` dispatches to each.
#[test]
fn every_verb_has_one_shape() {
    let main = std::fs::read_to_string(root().join("src/main.rs")).unwrap();
    let mut wrong = Vec::new();
    for file in rust_files(&root().join("src/commands")) {
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "mod" || name == "io" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let shaped = text.lines().any(|l| {
            l.starts_with("pub fn run(")
                && l.contains(", io: &mut Io, ")
                && (l.contains("settings: &Settings) -> anyhow::Result<ExitCode> {"))
        });
        if !shaped {
            wrong.push(format!("{name}.rs: no `pub fn run(args, io: &mut Io, settings: &Settings) -> anyhow::Result<ExitCode>`"));
        }
        if !main.contains(&format!("commands::{name}::run(")) {
            wrong.push(format!("{name}.rs: main does not dispatch to it"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// The command line is parsing only: it knows no verb, so verbs depend on it and never the
/// other way round.
#[test]
fn the_command_line_imports_no_verb() {
    let text = std::fs::read_to_string(root().join("src/cli.rs")).unwrap();
    let hits: Vec<&str> = text
        .lines()
        .filter(|l| l.split("//").next().unwrap_or("").contains("commands::"))
        .collect();
    assert!(hits.is_empty(), "src/cli.rs uses a verb: {hits:#?}");
}

/// Longer than this, a function is split along its seams, or says right above it why it is
/// one piece.
const MAX_FN_LINES: usize = 120;
/// The comment that exempts a function, on a line right above it (above its docs and
/// attributes too).
const ONE_PIECE: &str = "// One piece:";
/// Every `fn` in a file (free, in an impl or a trait, nested), with its first and last line.
struct Functions {
    found: Vec<(String, usize, usize)>,
}

impl Functions {
    fn push(&mut self, name: &syn::Ident, whole: proc_macro2::Span, sig: &syn::Signature) {
        let first = sig.span().start().line;
        self.found.push((name.to_string(), first, whole.end().line));
    }
}

impl<'ast> Visit<'ast> for Functions {
    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        self.push(&item.sig.ident, item.span(), &item.sig);
        syn::visit::visit_item_fn(self, item);
    }
    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        self.push(&item.sig.ident, item.span(), &item.sig);
        syn::visit::visit_impl_item_fn(self, item);
    }
    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if item.default.is_some() {
            self.push(&item.sig.ident, item.span(), &item.sig);
        }
        syn::visit::visit_trait_item_fn(self, item);
    }
}

/// Whether the lines right above line `first` (1-based), through docs, attributes and
/// comments, hold the one-piece marker.
fn marked_one_piece(lines: &[&str], first: usize) -> bool {
    lines[..first - 1]
        .iter()
        .rev()
        .map(|l| l.trim())
        .take_while(|l| l.starts_with("//") || l.starts_with("#[") || l.starts_with("#!["))
        .any(|l| l.starts_with(ONE_PIECE))
}

/// `(file, name, lines)` of every function in `src/` longer than [`MAX_FN_LINES`] and not
/// marked as one piece.
fn long_functions() -> Vec<(String, String, usize)> {
    let mut long = Vec::new();
    for (relative, text) in sources() {
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{relative}: {e}"));
        let mut functions = Functions { found: Vec::new() };
        functions.visit_file(&file);
        let lines: Vec<&str> = text.lines().collect();
        for (name, first, last) in functions.found {
            let length = last - first + 1;
            if length > MAX_FN_LINES && !marked_one_piece(&lines, first) {
                long.push((relative.clone(), name, length));
            }
        }
    }
    long
}

#[test]
fn no_function_is_too_long_to_hold_in_ones_head() {
    let long = long_functions();
    assert!(
        long.is_empty(),
        "functions over {MAX_FN_LINES} lines: split them, or say why each is one piece in a \
         `{ONE_PIECE}` comment right above it: {long:#?}"
    );
}

/// The measure itself: a function's lines from its signature to its closing brace, and the
/// marker only where it stands right above.
#[test]
fn function_lengths_are_measured_from_signature_to_brace() {
    let body = "    let x = 1;\n".repeat(MAX_FN_LINES - 1);
    let text = format!(
        "/// Docs.\nfn fits() {{\n{}}}\n\nimpl A {{\n    #[inline]\n    fn too_long(&self) {{\n{body}    }}\n}}\n\n// One piece: a table.\n/// Docs.\nfn marked() {{\n{body}}}\n\n// One piece: far away.\n\nfn unmarked() {{\n{body}}}\n",
        "    let x = 1;\n".repeat(MAX_FN_LINES - 2)
    );
    let file = syn::parse_file(&text).unwrap();
    let mut functions = Functions { found: Vec::new() };
    functions.visit_file(&file);
    let lines: Vec<&str> = text.lines().collect();
    let measured: Vec<(String, usize, bool)> = functions
        .found
        .iter()
        .map(|(name, first, last)| {
            (
                name.clone(),
                last - first + 1,
                marked_one_piece(&lines, *first),
            )
        })
        .collect();
    assert_eq!(
        measured,
        vec![
            ("fits".to_owned(), MAX_FN_LINES, false),
            ("too_long".to_owned(), MAX_FN_LINES + 1, false),
            ("marked".to_owned(), MAX_FN_LINES + 1, true),
            ("unmarked".to_owned(), MAX_FN_LINES + 1, false),
        ]
    );
}
