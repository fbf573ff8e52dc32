//! Real positions in: the OsmAnd-protocol receiver, the file importers, incremental
//! analysis, and the simulator's reports sent out to a tracking server.
//!
//! Owns everything between a position arriving (an HTTP request, a line of a file) and the
//! store: decoding the OsmAnd protocol (`osmand`, pure), naming the unit a tracker is
//! (`devices`), the writing session that commits positions together with their analysis
//! (`session`, over `live`'s per-vehicle engines and checkpoints), the HTTP server and its
//! writer thread (`server`, `writer`), the importers (`import`), and the emitter that plays a
//! simulated fleet into any OsmAnd server (`emit`). SQL stays in the store; outbound HTTP in
//! `plumbing::net`. docs/ingesta.md is the user's side of it.

pub mod devices;
pub mod emit;
pub mod import;
pub mod live;
pub mod osmand;
pub mod server;
pub mod session;
pub mod waits;
pub mod writer;
