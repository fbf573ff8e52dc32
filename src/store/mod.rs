//! The database, on SQLite (the embedded default: a file) or PostgreSQL (a server, `pg/`):
//! its schema, `meta`'s keys, the encoding of positions, the writer used by `flota simular`,
//! the analysis tables and what they cover, the live writes, and the read-only reader the
//! server uses.
//!
//! Owns every SQL statement and the only knowledge of which backend is in use. Nothing outside
//! this module builds SQL or holds a connection (tests/it/tidy checks): callers name a
//! [`Location`] and get typed methods ([`Store`], [`Writer`], [`Rewrite`] in `backend.rs`)
//! whose signatures name neither SQLite nor PostgreSQL.

pub mod analysis;
pub mod backend;
pub mod coverage;
pub mod encoding;
pub mod live;
pub mod location;
pub mod meta;
pub mod pages;
pub mod pg;
pub mod queries;
pub mod reader;
pub mod schema;
pub mod writer;

pub use backend::{Finished, LiveTx, Rewrite, Store, Writer};
pub use coverage::{AnalysisState, Covered, Unusable};
pub use encoding::{Reading, StoredRow};
pub use live::{NewDatabase, RowChanges, Written};
pub use location::{Location, LocationError};
pub use meta::{AnalysisRecord, Meta};
pub use queries::{AlertKey, DayKm, DayRow, EventRow, KmRow, VehicleEvents};
pub use reader::{StoreError, StoredFence, StoredRoute, Vehicle};
pub use schema::{ANALYSIS_VERSION, SCHEMA_VERSION};
pub use writer::WriteError;
