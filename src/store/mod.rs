//! The SQLite database: its schema, `meta`'s keys, the encoding of positions, the writer used
//! by `flota simular`, the analysis tables and what they cover, and the read-only reader the
//! server uses.
//!
//! Owns every SQL statement. Nothing outside this module builds SQL or holds the connection
//! (tests/it/tidy.rs checks): callers get typed methods whose signatures name no SQLite type.

pub mod analysis;
pub mod coverage;
pub mod encoding;
pub mod live;
pub mod meta;
pub mod queries;
pub mod reader;
pub mod schema;
pub mod writer;

pub use coverage::{AnalysisState, Covered, Unusable};
pub use encoding::{Reading, StoredRow};
pub use live::{LiveTx, NewDatabase, RowChanges, Written};
pub use meta::{AnalysisRecord, Meta};
pub use queries::{DayKm, DayRow, EventRow, KmRow, VehicleEvents};
pub use reader::{Store, StoreError, StoredFence, StoredRoute, Vehicle};
pub use schema::{ANALYSIS_VERSION, SCHEMA_VERSION};
pub use writer::{WriteError, Writer};
