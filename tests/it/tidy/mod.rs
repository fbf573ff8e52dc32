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

/// The string literals of Rust source `text`, comments left out, each with the line it
/// starts on. Enough of Rust's lexing for this repository: line and block comments, plain,
/// byte and raw strings, char literals and lifetimes.
fn string_literals(text: &str) -> Vec<(usize, String)> {
    let chars: Vec<char> = text.chars().collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut literals = Vec::new();
    let (mut i, mut line) = (0, 1);
    // Steps over `chars[i]`, counting lines.
    let advance = |i: &mut usize, line: &mut usize| {
        if chars[*i] == '\n' {
            *line += 1;
        }
        *i += 1;
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            while i < chars.len() && !(chars[i] == '*' && at(i + 1) == '/') {
                advance(&mut i, &mut line);
            }
            i += 2;
        } else if c == 'r' && (i == 0 || !ident(chars[i - 1]) || chars[i - 1] == 'b') && {
            let hashes = chars[i + 1..].iter().take_while(|h| **h == '#').count();
            at(i + 1 + hashes) == '"'
        } {
            let hashes = chars[i + 1..].iter().take_while(|h| **h == '#').count();
            let close: String = std::iter::once('"')
                .chain("#".repeat(hashes).chars())
                .collect();
            let start = (line, i + 2 + hashes);
            i = start.1;
            while i < chars.len() && !chars[i..].iter().collect::<String>().starts_with(&close) {
                advance(&mut i, &mut line);
            }
            literals.push((start.0, chars[start.1..i.min(chars.len())].iter().collect()));
            i += close.len();
        } else if c == '"' {
            let (start_line, mut literal) = (line, String::new());
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    literal.push(chars[i]);
                    advance(&mut i, &mut line);
                }
                literal.push(chars[i]);
                advance(&mut i, &mut line);
            }
            literals.push((start_line, literal));
            i += 1;
        } else if c == '\'' && at(i + 1) == '\\' {
            i += 2;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
        } else if c == '\'' && at(i + 2) == '\'' {
            i += 3;
        } else {
            advance(&mut i, &mut line);
        }
    }
    literals
}

/// The SQL statement `literal` starts or holds, if any: upper-case keywords, as every
/// statement in this repository is written.
fn sql_keyword(literal: &str) -> Option<String> {
    let words: Vec<&str> = literal
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let objects = ["TABLE", "INDEX", "VIEW", "TRIGGER"];
    words.iter().enumerate().find_map(|(n, word)| {
        let next = words.get(n + 1).copied().unwrap_or("");
        let found = match *word {
            "SELECT" | "PRAGMA" => true,
            "INSERT" | "REPLACE" => next == "INTO",
            "DELETE" => next == "FROM",
            "CREATE" | "DROP" | "ALTER" => objects.contains(&next),
            "UPDATE" => words.get(n + 2) == Some(&"SET"),
            _ => false,
        };
        found.then(|| format!("{word} {next}"))
    })
}

/// Only `src/store/` builds SQL or names the SQLite crate: every statement is a typed store
/// method, so callers never depend on the database behind it.
#[test]
fn only_the_store_speaks_sql() {
    let mut in_store = 0;
    let mut hits = Vec::new();
    for file in rust_files(&root().join("src")) {
        let relative = file.strip_prefix(root()).unwrap().display().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        let store = relative.starts_with("src/store/");
        for (line, literal) in string_literals(&text) {
            if let Some(keyword) = sql_keyword(&literal) {
                if store {
                    in_store += 1;
                } else {
                    hits.push(format!("{relative}:{line}: {keyword}"));
                }
            }
        }
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for backend in ["rusqlite", "postgres::"] {
                if !store && code.contains(backend) {
                    hits.push(format!("{relative}:{}: {backend}", number + 1));
                }
            }
        }
    }
    // The scanner itself works: it finds the store's statements.
    assert!(
        in_store > 20,
        "only {in_store} statements found in src/store"
    );
    assert!(hits.is_empty(), "SQL outside src/store: {hits:#?}");
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

/// Only `src/plumbing/net.rs` makes outbound HTTP requests: its errors are Spanish and carry
/// no URL, and the bodies it hands back have the request's secrets scrubbed. Any other file
/// naming the HTTP client or TLS crates could hold (and print) a library error with the URL
/// and its key in it. Serving HTTP is another matter: the server crates (axum, hyper, tower)
/// may appear only in the transports that listen — the MCP endpoint (`src/mcp/http/`) and the
/// trackers' receiver (`src/ingest/`) — and there they never see an outbound URL or key.
#[test]
fn only_net_speaks_http() {
    let client_crates = ["reqwest", "ureq", "rustls"];
    let server_crates = ["hyper", "http_body", "axum", "tower"];
    let listens = |relative: &str| {
        relative.starts_with("src/mcp/http/") || relative.starts_with("src/ingest/")
    };
    let mut hits = Vec::new();
    for dir in ["src", "examples", "benches"] {
        for file in rust_files(&root().join(dir)) {
            let relative = file.strip_prefix(root()).unwrap().display().to_string();
            let text = std::fs::read_to_string(&file).unwrap();
            for (number, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                let names = |name: &str| {
                    code.contains(&format!("{name}::")) || code.contains(&format!("{name};"))
                };
                let client =
                    relative != "src/plumbing/net.rs" && client_crates.iter().any(|n| names(n));
                let server = !listens(&relative) && server_crates.iter().any(|n| names(n));
                if client || server {
                    hits.push(format!("{relative}:{}: {}", number + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        hits.is_empty(),
        "HTTP crates outside src/plumbing/net.rs (clients) or the listening transports \
         (servers): {hits:#?}"
    );
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

/// Wall-clock rules have one owner, `src/calendar/`: a local time to an instant (the repeated
/// and the skipped hour), a local day's bounds, an instant's local day. Anywhere else, chrono's
/// local-time conversions (or a day made of 86,400 seconds after a midnight) would be a private
/// copy that disagrees on 23- and 25-hour days.
#[test]
fn only_the_calendar_turns_wall_clock_times_into_instants() {
    let forbidden = [
        "from_local_datetime",
        "and_local_timezone",
        "offset_from_local",
        "earliest()",
        "latest()",
        "LocalResult",
        "and_hms",
    ];
    let mut hits = Vec::new();
    for dir in ["src", "examples", "benches", "fuzz/src"] {
        let path = root().join(dir);
        if !path.exists() {
            continue;
        }
        for file in rust_files(&path) {
            let relative = file.strip_prefix(root()).unwrap().display().to_string();
            if relative.starts_with("src/calendar/") {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for (number, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                let day_of_seconds = code.contains("86_400") && code.contains("day");
                if forbidden.iter().any(|f| code.contains(f)) || day_of_seconds {
                    hits.push(format!("{relative}:{}: {}", number + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        hits.is_empty(),
        "wall-clock conversions outside src/calendar/: {hits:#?}"
    );
}

/// `link/server-symbols.txt` is what the linker reads (`build.rs`): the functions of a server
/// session by their symbol names, one a line, as `link/regenerate.sh` writes them. A list
/// edited by hand into demangled paths or emptied would link silently into the old, scattered
/// layout, and the server's resident memory would grow back without any test failing.
#[test]
fn the_link_order_lists_the_servers_functions_by_symbol() {
    let list = std::fs::read_to_string(root().join("link/server-symbols.txt")).unwrap();
    let symbols: Vec<&str> = list
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .collect();
    let malformed: Vec<&&str> = symbols
        .iter()
        .filter(|s| {
            s.contains(char::is_whitespace)
                || s.contains("::")
                || !s
                    .chars()
                    .next()
                    .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        })
        .collect();
    assert!(malformed.is_empty(), "not symbol names: {malformed:#?}");
    assert!(
        symbols.len() > 500,
        "only {} functions listed",
        symbols.len()
    );
    // The session's own core is there: the tool workers and the JSON-RPC reader.
    for part in ["3mcp6server", "3mcp7jsonrpc"] {
        assert!(
            symbols.iter().any(|s| s.contains(part)),
            "no function of {part} listed"
        );
    }
    let build = std::fs::read_to_string(root().join("build.rs")).unwrap();
    assert!(build.contains("--symbol-ordering-file={manifest}/link/server-symbols.txt"));
}
