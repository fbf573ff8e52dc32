//! Integration tests: the real binaries, driven from outside.
//!
//! - `protocol`: raw JSON lines against `flota servir`;
//! - `analysis`: missing or stale detections are never served as fact; changed databases reload;
//! - `example_server`: the example tools, validation per era, progress, cancellation;
//! - `in_process`: the core through in-memory pipes, panics and property tests;
//! - `rmcp_client`: the official Rust SDK as a client;
//! - `cli`: help, errors, `config claude`, `cliente`;
//! - `client_terminal`: `cliente` on a pseudo-terminal: line editor, answers first, maps saved,
//!   suggestions, `NO_COLOR`, Ctrl-C and Ctrl-D;
//! - `simulation`: `flota simular` into temp dirs, positions checked against the truth;
//! - `scenario_errors`: every bad-scenario case and its Spanish message;
//! - `ground_truth`: tool answers against the injected truth, and `flota evaluar`'s targets;
//! - `evaluate`: `flota evaluar` as a yardstick: tolerance, not-applicable scores, the F1 gate;
//! - `kilometres`: GPS-only kilometres (odometer ignored) per unit-day, other seeds, Madrid;
//! - `geocoding`: online addresses against loopback mock services, and their fallback;
//! - `maps`: `mapa_recorrido` offline and over loopback tiles, and `flota exportar`;
//! - `routes`: `flota rutas` against loopback Google Directions and OSRM mocks (`http_mock`);
//! - `fuzz_corpus`: both fuzz targets' committed seeds through the harness (missing and
//!   simulated database) and the real `flota servir`, on stable;
//! - `paths`: folders as databases, truth logs aimed at databases, unwritable outputs;
//! - `hardening`: the bad-input matrix (snapshot), time limit, flood, database faults, SIGKILL;
//! - `redaction`: no secret in any output when geocoding, tiles or directions fail, every fault;
//! - `shutdown`: stdin closed while nobody reads, SIGTERM/SIGINT mid-answer, the grace;
//! - `tools`: the fleet tools' contract: names, normalisation, business errors, caps;
//! - `settings`: environment variables reach the verbs that use them, and only those;
//! - `tidy`: repository rules (headers, a fleet-free protocol core, no stray printing, HTTP only
//!   in `net`; `tidy/layout.rs`: the environment and the clock at the edge, one verb shape,
//!   short functions).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod analysis;
mod cli;
#[cfg(unix)]
mod client_terminal;
mod evaluate;
mod example_server;
mod flood;
mod fuzz_corpus;
mod geocoding;
mod ground_truth;
mod hardening;
mod http;
mod http_mock;
mod in_process;
mod kilometres;
mod maps;
mod paths;
mod protocol;
mod redaction;
mod rmcp_client;
mod routes;
mod scenario_errors;
mod settings;
mod shutdown;
mod simulation;
mod support;
mod tidy;
mod tools;
