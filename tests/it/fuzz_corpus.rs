//! The fuzz harness on stable, in `cargo test`: every committed seed and regression input in
//! `fuzz/semillas/` — raw bytes (`mensajes`) and structured envelopes decoded as libFuzzer
//! decodes them (`mensajes_estructurados`) — goes through the same checks `cargo fuzz` runs
//! (`fuzz/src/harness.rs`), against a missing database and a simulated one, and then through
//! the real threaded server (`flota servir`), which must give the same answers: one per
//! request with its id echoed, none for notifications, and stay alive.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::ground_truth::fixture;
use crate::support::{Server, TIMEOUT, flota_bin};

#[allow(dead_code, clippy::unwrap_used, clippy::expect_used)]
#[path = "../../fuzz/src/harness.rs"]
mod harness;

#[allow(dead_code)]
#[path = "../../fuzz/src/structured.rs"]
mod structured;

/// The harness splits lines at 64 KiB, the server at 16 MiB: seeds stay under the smaller so
/// both see the same lines.
const HARNESS_LINE_BYTES: usize = 64 * 1024;

/// Every fuzz target's folder of committed inputs, each input as the session bytes it means.
fn seeds() -> BTreeMap<String, Vec<(PathBuf, Vec<u8>)>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/semillas");
    let mut folders = BTreeMap::new();
    for target in std::fs::read_dir(&root).unwrap() {
        let target = target.unwrap().path();
        let name = target.file_name().unwrap().to_string_lossy().into_owned();
        let mut inputs = Vec::new();
        for input in std::fs::read_dir(&target).unwrap() {
            let path = input.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            let session = match name.as_str() {
                "mensajes" => bytes,
                "mensajes_estructurados" => structured::decode(&bytes)
                    .unwrap_or_else(|| panic!("{} does not decode as a session", path.display())),
                other => panic!("fuzz/semillas/{other}: no fuzz target of that name"),
            };
            assert!(
                session
                    .split(|b| *b == b'\n')
                    .all(|line| line.len() < HARNESS_LINE_BYTES),
                "{}: a line over 64 KiB",
                path.display()
            );
            inputs.push((path, session));
        }
        inputs.sort();
        folders.insert(name, inputs);
    }
    folders
}

/// The ids a later `notifications/cancelled` in the session names: the server may rightly
/// leave those calls unanswered (a cancelled call gets nothing more).
fn cancelled_ids(session: &[u8]) -> Vec<Value> {
    session
        .split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .filter(|m| m.get("id").is_none() && m["method"] == "notifications/cancelled")
        .map(|m| m["params"]["requestId"].clone())
        .collect()
}

/// Sends `session` to a real `flota servir --db DB`, then a `ping`; checks that the server
/// answers what the harness answered (ids, `null` for lines without one), nothing else, and
/// is still alive; then that it exits cleanly once its input closes.
fn through_the_server(db: &Path, session: &[u8], expected: &[Value]) -> Result<(), String> {
    let cancelled = cancelled_ids(session);
    let mut server = Server::spawn(flota_bin(), &["servir", "--db", db.to_str().unwrap()]);
    server.send_bytes(session);
    // A seed's last line may lack its newline.
    server.send_bytes(b"\n");
    let mut answered = Vec::new();
    let mut take = |line: String| {
        let value: Value = serde_json::from_str(&line).unwrap();
        // Progress notifications are not answers.
        if value.get("method").is_none() {
            answered.push(value["id"].clone());
        }
    };
    let mut pending: Vec<&Value> = expected
        .iter()
        .filter(|id| !cancelled.contains(id))
        .collect();
    while !pending.is_empty() {
        let line = server
            .try_recv_line(TIMEOUT)
            .ok_or_else(|| format!("no answer for {pending:?} in {TIMEOUT:?}"))?;
        let value: Value = serde_json::from_str(&line).unwrap();
        if let Some(at) = pending.iter().position(|id| **id == value["id"]) {
            pending.remove(at);
        }
        take(line);
    }
    let alive = json!("fuzz-vivo");
    server.send_json(&json!({"jsonrpc": "2.0", "id": alive, "method": "ping"}));
    loop {
        let line = server
            .try_recv_line(TIMEOUT)
            .ok_or("the server stopped answering (no pong)")?;
        let value: Value = serde_json::from_str(&line).unwrap();
        if value["id"] == alive {
            if value["result"] != json!({}) {
                return Err(format!("ping answered {line}"));
            }
            break;
        }
        take(line);
    }
    let (status, rest) = server.finish();
    rest.into_iter().for_each(&mut take);
    if !status.success() {
        return Err(format!("exit {status} after its input closed"));
    }
    // Same answers as the harness, except calls cancelled in flight, which may have none.
    let mut missing: Vec<Value> = expected.to_vec();
    for id in &answered {
        match missing.iter().position(|m| m == id) {
            Some(at) => {
                missing.remove(at);
            }
            None => return Err(format!("unexpected answer with id {id}: {answered:?}")),
        }
    }
    match missing.iter().find(|id| !cancelled.contains(id)) {
        Some(id) => Err(format!("no answer with id {id}: {answered:?}")),
        None => Ok(()),
    }
}

#[test]
fn committed_fuzz_inputs_keep_the_protocol_promises() {
    let databases = [
        PathBuf::from("/nonexistent/flota-fuzz.db"),
        fixture("minimo").db.clone(),
    ];
    let services: Vec<_> = databases
        .iter()
        .map(|db| harness::service_for(db))
        .collect();
    let mut run: BTreeMap<String, usize> = BTreeMap::new();
    let mut answers = 0;
    // Tool calls answered with data, per database: the simulated one must give some.
    let mut with_data = vec![0; databases.len()];
    for (folder, inputs) in seeds() {
        for (path, session) in &inputs {
            for (index, (db, service)) in databases.iter().zip(&services).enumerate() {
                let answered = harness::check_session_with(service, session);
                answers += answered.len();
                with_data[index] += answered
                    .iter()
                    .filter(|a| {
                        a["result"].get("structuredContent").is_some()
                            && a["result"]["isError"] != true
                    })
                    .count();
                let expected: Vec<Value> = answered.iter().map(|a| a["id"].clone()).collect();
                // The first failure ends the test: a server that drops answers would otherwise
                // cost the full wait for every seed.
                if let Err(why) = through_the_server(db, session, &expected) {
                    panic!("{} on {}: {why}", path.display(), db.display());
                }
            }
            *run.entry(folder.clone()).or_default() += 1;
        }
    }
    // Both targets' seeds ran, every one: a skipped or emptied folder fails here.
    for target in ["mensajes", "mensajes_estructurados"] {
        let count = run.get(target).copied().unwrap_or(0);
        assert!(count >= 10, "only {count} seeds of {target} ran: {run:?}");
    }
    assert!(answers > 100, "only {answers} answers over {run:?}");
    assert_eq!(with_data[0], 0, "data from a missing database?");
    assert!(
        with_data[1] > 0,
        "no tool answered with data from the simulated database"
    );
}
