//! The docs stay true: every shell block of README.md and docs/*.md runs as written.
//!
//! A fenced block whose language is `bash` or `sh` is run with `bash -eo pipefail` in a fresh
//! temporary folder per document (blocks of one document share it, in order, so a block may
//! use what an earlier one made), holding copies of `rutas/` and `escenarios/` as a checkout
//! does, with the built `flota` first on `PATH`, tiles off and no flota variable set. It must
//! exit 0, or the code its info string gives. Words after the language in the info string:
//!
//! - `skip: REASON` — not run (it needs the network, Claude Desktop, a build, valgrind…);
//!   counted and listed by reason;
//! - `slow` — run only when `FLOTA_DOCS_LENTOS=1` (the scale scenario, benchmarks);
//! - `exit=N` — the exit code the block ends with;
//! - on a `text` block, `output` — the block is the stdout of the shell block before it,
//!   exactly (a trace that must be regenerated when the program's output changes); after a
//!   `slow` block it is checked only when that block runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::flota_bin;

/// Per block; generous, reached only when something hangs.
const BLOCK_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Debug)]
struct Block {
    line: usize,
    language: String,
    attributes: String,
    text: String,
}

impl Block {
    fn is_shell(&self) -> bool {
        matches!(self.language.as_str(), "bash" | "sh")
    }

    fn skip_reason(&self) -> Option<&str> {
        self.attributes
            .split_once("skip:")
            .map(|(_, reason)| reason.trim())
    }

    fn has(&self, word: &str) -> bool {
        self.attributes.split_whitespace().any(|w| w == word)
    }

    fn expected_exit(&self) -> i32 {
        self.attributes
            .split_whitespace()
            .find_map(|w| w.strip_prefix("exit="))
            .map_or(0, |n| n.parse().expect("exit=N takes a number"))
    }
}

/// The fenced blocks of a Markdown text (fences of three backticks at the start of a line).
fn blocks(markdown: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut open: Option<Block> = None;
    for (index, line) in markdown.lines().enumerate() {
        let Some(fence) = line.strip_prefix("```") else {
            if let Some(block) = open.as_mut() {
                block.text.push_str(line);
                block.text.push('\n');
            }
            continue;
        };
        match open.take() {
            Some(block) => found.push(block),
            None => {
                let (language, attributes) =
                    fence.trim().split_once(' ').unwrap_or((fence.trim(), ""));
                open = Some(Block {
                    line: index + 1,
                    language: language.to_owned(),
                    attributes: attributes.trim().to_owned(),
                    text: String::new(),
                });
            }
        }
    }
    assert!(open.is_none(), "an unclosed fence");
    found
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, root().join("README.md"));
    docs
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// What a block did: its exit code (None when killed at the deadline), stdout, stderr.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run(block: &Block, dir: &Path) -> Ran {
    let bin = flota_bin().parent().unwrap().to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let (out, err) = (dir.join(".salida"), dir.join(".errores"));
    let mut child = Command::new("bash")
        .args(["-eo", "pipefail", "-c", &block.text])
        .current_dir(dir)
        .env("PATH", path)
        .env("HOME", dir)
        .env("XDG_STATE_HOME", dir.join(".estado"))
        .env("XDG_CACHE_HOME", dir.join(".cache"))
        .env("FLOTA_TILES_URL", "no")
        .env_remove("FLOTA_DB")
        .env_remove("MCP_FLOTA_DB")
        .env_remove("FLOTA_AHORA")
        .env_remove("FLOTA_LOG")
        .env_remove("GOOGLE_MAPS_API_KEY")
        .env_remove("FLOTA_OSRM_URL")
        .env_remove("FLOTA_GEOCODER_URL")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + BLOCK_TIMEOUT;
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        code,
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
    }
}

#[test]
fn every_shell_block_of_the_docs_runs_as_written() {
    let slow_too = std::env::var_os("FLOTA_DOCS_LENTOS").is_some_and(|v| v == "1");
    let mut ran = 0;
    let mut skipped: Vec<String> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    for doc in documents() {
        let name = doc.strip_prefix(root()).unwrap().display().to_string();
        let markdown = std::fs::read_to_string(&doc).unwrap();
        let dir = tempfile::tempdir().unwrap();
        copy_tree(&root().join("rutas"), &dir.path().join("rutas"));
        copy_tree(&root().join("escenarios"), &dir.path().join("escenarios"));
        let mut last_stdout: Option<String> = None;
        // The shell block before was `slow` and not run: its output block waits for it too.
        let mut slow_skipped = false;
        for block in blocks(&markdown) {
            let place = format!("{name}:{}", block.line);
            if block.language == "text" && block.has("output") {
                if slow_skipped {
                    continue;
                }
                match &last_stdout {
                    Some(stdout) if stdout.trim_end() == block.text.trim_end() => {}
                    Some(stdout) => failures.push(format!(
                        "{place}: the block is not the output of the command before it; it now reads:\n{}",
                        first_difference(&block.text, stdout)
                    )),
                    None => failures.push(format!("{place}: `output` follows no block that ran")),
                }
                continue;
            }
            if !block.is_shell() {
                continue;
            }
            last_stdout = None;
            slow_skipped = false;
            if let Some(reason) = block.skip_reason() {
                assert!(!reason.is_empty(), "{place}: `skip:` without a reason");
                skipped.push(format!("{place} ({reason})"));
                continue;
            }
            if block.has("slow") && !slow_too {
                skipped.push(format!("{place} (slow: FLOTA_DOCS_LENTOS=1)"));
                slow_skipped = true;
                continue;
            }
            let result = run(&block, dir.path());
            ran += 1;
            if result.code != Some(block.expected_exit()) {
                failures.push(format!(
                    "{place}: exit {:?} instead of {}\n$ {}\n{}{}",
                    result.code,
                    block.expected_exit(),
                    block.text.trim_end(),
                    result.stdout.chars().take(2000).collect::<String>(),
                    result.stderr
                ));
            }
            last_stdout = Some(result.stdout);
        }
    }
    println!("docs: {ran} blocks run, {} skipped:", skipped.len());
    for skip in &skipped {
        println!("  {skip}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The parser finds the blocks (README's and the docs' own runnable ones).
    assert!(ran >= 5, "only {ran} blocks ran");
}

/// Where `documented` and `actual` first part: the line, and both around the first character
/// that differs (trace lines are long).
fn first_difference(documented: &str, actual: &str) -> String {
    let (doc, now): (Vec<&str>, Vec<&str>) =
        (documented.lines().collect(), actual.lines().collect());
    let at = doc
        .iter()
        .zip(&now)
        .position(|(a, b)| a != b)
        .unwrap_or(doc.len().min(now.len()));
    let (a, b) = (
        doc.get(at).unwrap_or(&"(end)"),
        now.get(at).unwrap_or(&"(end)"),
    );
    let from = a
        .chars()
        .zip(b.chars())
        .position(|(x, y)| x != y)
        .unwrap_or(0)
        .saturating_sub(40);
    let around = |s: &str| s.chars().skip(from).take(120).collect::<String>();
    format!(
        "line {} of the block, from character {from}\n  documented: {}\n  actual:     {}\n\
         (run the block before it in a temporary folder and paste its stdout)",
        at + 1,
        around(a),
        around(b)
    )
}

#[test]
fn fences_and_their_markers_are_read() {
    let markdown =
        "a\n```bash skip: red\nx\n```\n```sh exit=2 slow\ny\nz\n```\n```text output\nq\n```\n";
    let found = blocks(markdown);
    assert_eq!(found.len(), 3);
    assert_eq!(found[0].skip_reason(), Some("red"));
    assert!(found[1].is_shell() && found[1].has("slow"));
    assert_eq!(found[1].expected_exit(), 2);
    assert_eq!(found[1].text, "y\nz\n");
    assert!(found[2].has("output") && !found[2].is_shell());
}
