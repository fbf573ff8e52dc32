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
//! - `docs`: every shell block of README.md and docs/*.md runs as written (markers: `skip:`,
//!   `slow`, `exit=N`; a `text output` block is the output of the block before it);
//! - `crossings`: geofence crossings counted per UTC day on SQLite against a direct count,
//!   whatever wrote the events;
//! - `simulation`: `flota simular` into temp dirs, positions checked against the truth;
//! - `scenario_errors`: every bad-scenario case and its Spanish message;
//! - `dense_city`: a dense centre's noise in Madrid, seeds 2–4: the F1 floor, units stopped now;
//! - `evidence`: each event's `evidencia` against the positions; one ongoing long stop told the
//!   same by every tool; events begun before the data flagged;
//! - `ground_truth`: tool answers against the injected truth, and `flota evaluar`'s targets;
//! - `changeover`: date words and ranges on the days the clocks change, a fleet in two zones;
//! - `evaluate`: `flota evaluar` as a yardstick: tolerance, not-applicable scores, the F1 gate;
//! - `fidelity_grid`: `flota evaluar --matriz`: a reduced noise grid as a regression gate, the
//!   gate failing by name, the files, bad grid flags;
//! - `kilometres`: GPS-only kilometres (odometer ignored) per unit-day, other seeds, Madrid;
//! - `geocoding`: online addresses against loopback mock services, and their fallback;
//! - `maps`: `mapa_recorrido` offline and over loopback tiles, and `flota exportar`;
//! - `routes`: `flota rutas` against loopback Google Directions and OSRM mocks (`http_mock`);
//! - `fuzz_corpus`: both fuzz targets' committed seeds through the harness (missing and
//!   simulated database) and the real `flota servir`, on stable;
//! - `pg`: PostgreSQL as the second backend on a throwaway cluster (tests/pg/cluster.sh): every
//!   tool's answer identical to SQLite's, atomic `simular`, faults in Spanish;
//! - `paths`: folders as databases, truth logs aimed at databases, unwritable outputs;
//! - `hardening`: the bad-input matrix (snapshot), time limit, flood, database faults, SIGKILL;
//! - `redaction`: no secret in any output when geocoding, tiles or directions fail, every fault;
//! - `shutdown`: stdin closed while nobody reads, SIGTERM/SIGINT mid-answer, the grace;
//! - `spanish`: every help and a set of failures across verbs read with no English; a reader
//!   that stops reading ends any verb quietly;
//! - `adaptive_losses`: signal losses on an adaptive tracker in a Madrid fleet of its own:
//!   the silence each loss caused, in the truth and the positions, and the engine finding it;
//! - `trackers`: tracker profiles (`escenarios/rastreadores.toml`): what the truth says the
//!   trackers did against the positions stored, and `flota evaluar` reading the new kinds;
//! - `tools`: the fleet tools' contract: names, normalisation, business errors, caps;
//! - `wall_clock`: property test of the simulator's truth on any clock (DST, night shifts,
//!   several zones, timed injections);
//! - `other_places`: a Santiago de Chile fleet (`tests/lugares/`), whose clocks change at
//!   midnight, through the tools: kilometres per local day, the hour Sunday lacks, alert days;
//! - `settings`: environment variables reach the verbs that use them, and only those;
//! - `views`: the map views' data (`flota::ui::datos`) against `mapa_recorrido` and the
//!   positions (the views themselves run in a browser: tests/browser/);
//! - `tidy`: repository rules (headers, a fleet-free protocol core, no stray printing, HTTP only
//!   in `net`; `tidy/layout.rs`: the environment and the clock at the edge, one verb shape,
//!   short functions).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod adaptive_losses;
mod analysis;
mod apps;
mod changeover;
mod cli;
#[cfg(unix)]
mod client_terminal;
mod crossings;
mod dense_city;
mod docs;
mod evaluate;
mod evidence;
mod example_server;
mod fidelity_grid;
mod flood;
mod fuzz_corpus;
mod geocoding;
mod ground_truth;
mod hardening;
mod http;
mod http_mock;
#[cfg(unix)]
mod import;
mod in_process;
mod ingest;
mod kilometres;
#[cfg(unix)]
mod live;
mod maps;
mod other_places;
mod paths;
mod pg;
mod protocol;
#[cfg(unix)]
mod receive;
mod redaction;
mod rmcp_client;
mod routes;
mod scenario_errors;
mod settings;
mod shutdown;
mod simulation;
mod spanish;
mod support;
mod tasks;
mod tidy;
mod tools;
mod trackers;
mod views;
mod wall_clock;
