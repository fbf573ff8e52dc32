//! Repository hygiene that the compiler cannot check.

mod layout;

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every source file opens with a `//!` paragraph saying what it owns.
#[test]
fn every_source_file_has_a_module_header() {
    let mut missing = Vec::new();
    for dir in ["src", "examples"] {
        for file in rust_files(&root().join(dir)) {
            let text = std::fs::read_to_string(&file).unwrap();
            if !text.starts_with("//!") {
                missing.push(file.display().to_string());
            }
        }
    }
    assert!(
        missing.is_empty(),
        "files without a //! header: {missing:?}"
    );
}

/// The protocol core knows nothing of fleets or storage.
#[test]
fn protocol_core_has_no_fleet_words() {
    let forbidden = [
        "vehic",
        "placa",
        "flota",
        "fleet",
        "sqlite",
        "geocerca",
        "geofence",
        "odometr",
        "conductor",
        "driver",
    ];
    let mut hits = Vec::new();
    for file in rust_files(&root().join("src/mcp")) {
        let text = std::fs::read_to_string(&file).unwrap().to_lowercase();
        for (number, line) in text.lines().enumerate() {
            for word in forbidden {
                if line.contains(word) {
                    hits.push(format!("{}:{}: {word}", file.display(), number + 1));
                }
            }
        }
    }
    assert!(hits.is_empty(), "fleet words in src/mcp: {hits:#?}");
}

/// Only `main.rs`, the log and the transport may reach stdout/stderr directly.
#[test]
fn nothing_else_prints() {
    let allowed = ["src/main.rs", "src/plumbing/log.rs"];
    let mut hits = Vec::new();
    for file in rust_files(&root().join("src")) {
        let relative = file.strip_prefix(root()).unwrap().display().to_string();
        if allowed.contains(&relative.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for needle in [
            "println!",
            "print!(",
            "eprintln!",
            "eprint!(",
            "std::io::stdout()",
            "io::stdout()",
        ] {
            if text.contains(needle) {
                hits.push(format!("{relative}: {needle}"));
            }
        }
    }
    assert!(hits.is_empty(), "{hits:?}");
}

/// Only `src/plumbing/net.rs` speaks HTTP: its errors are Spanish and carry no URL, and the
/// bodies it hands back have the request's secrets scrubbed. Any other file naming the HTTP or
/// TLS crates could hold (and print) a library error with the URL and its key in it.
#[test]
fn only_net_speaks_http() {
    let crates = ["reqwest", "hyper", "ureq", "rustls", "http_body"];
    let mut hits = Vec::new();
    for dir in ["src", "examples", "benches"] {
        for file in rust_files(&root().join(dir)) {
            let relative = file.strip_prefix(root()).unwrap().display().to_string();
            if relative == "src/plumbing/net.rs" {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for (number, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for name in crates {
                    if code.contains(&format!("{name}::")) || code.contains(&format!("{name};")) {
                        hits.push(format!("{relative}:{}: {}", number + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        hits.is_empty(),
        "HTTP outside src/plumbing/net.rs: {hits:#?}"
    );
}
