//! Repository hygiene that the compiler cannot check.

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
    let allowed = ["src/main.rs", "src/log.rs"];
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

/// Only `src/net.rs` speaks HTTP: its errors are Spanish and carry no URL, and the bodies it
/// hands back have the request's secrets scrubbed. Any other file naming the HTTP or TLS
/// crates could hold (and print) a library error with the URL and its key in it.
#[test]
fn only_net_speaks_http() {
    let crates = ["reqwest", "hyper", "ureq", "rustls", "http_body"];
    let mut hits = Vec::new();
    for dir in ["src", "examples", "benches"] {
        for file in rust_files(&root().join(dir)) {
            let relative = file.strip_prefix(root()).unwrap().display().to_string();
            if relative == "src/net.rs" {
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
    assert!(hits.is_empty(), "HTTP outside src/net.rs: {hits:#?}");
}

/// The code of every file under `dir` (relative to the crate), line by line with its number:
/// `//` comments cut off, and the `#[cfg(test)]` module at the end of a file left out (tests
/// may read fixtures; the rules below are about what the code does).
fn code_lines(dir: &str) -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    for file in rust_files(&root().join(dir)) {
        let relative = file.strip_prefix(root()).unwrap().display().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            let code = line.split("//").next().unwrap_or("");
            out.push((relative.clone(), number + 1, code.to_owned()));
        }
    }
    out
}

/// Where `code` names the module `name` as a path (`crate::engine::…`, `super::engine`…),
/// not as part of a longer identifier (`VehicleEngine::`).
fn names_module(code: &str, name: &str) -> bool {
    let needle = format!("{name}::");
    code.match_indices(&needle).any(|(at, _)| {
        !code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// The simulator and the detection engine never import each other: the engine must find
/// events in positions alone, never in what the simulator knows; the simulator must not
/// shape its output to what the engine detects.
#[test]
fn simulator_and_engine_never_import_each_other() {
    let mut hits = Vec::new();
    for (dir, other) in [("src/sim", "engine"), ("src/engine", "sim")] {
        for (file, number, code) in code_lines(dir) {
            if names_module(&code, other) {
                hits.push(format!("{file}:{number}: {}", code.trim()));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "sim and engine import each other: {hits:#?}"
    );
}

/// The simulator core is sans-IO and deterministic: no filesystem, database, network,
/// environment, wall clock or unseeded randomness. Its only outputs go to the `Sink` it is
/// handed, and every random draw comes from a stream derived from the scenario's seed.
#[test]
fn simulator_core_is_sans_io_and_deterministic() {
    let forbidden = [
        "std::fs",
        "fs::",
        "File::",
        "std::io",
        "std::net",
        "std::env",
        "std::process",
        "std::thread",
        "SystemTime",
        "Instant",
        "Utc::now",
        "Local::now",
        "rusqlite",
        "crate::store",
        "crate::net",
        "crate::output",
        "thread_rng",
        "rand::rng(",
        "rand::random",
        "from_entropy",
        "from_os_rng",
        "OsRng",
        "getrandom",
        "log_",
        "print",
    ];
    let mut hits = Vec::new();
    for (file, number, code) in code_lines("src/sim") {
        for word in forbidden {
            if code.contains(word) {
                hits.push(format!("{file}:{number}: {word}: {}", code.trim()));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "I/O or nondeterminism in src/sim: {hits:#?}"
    );
}
