//! The SQLite database: its schema, the encoding of positions, the writer used by
//! `flota simular`, the analysis tables, and the read-only reader the server uses.
//!
//! Owns every SQL statement. Nothing outside this module builds SQL.

pub mod analysis;
pub mod encoding;
pub mod queries;
pub mod reader;
pub mod schema;
pub mod writer;

pub use encoding::StoredRow;
pub use queries::{DayKm, DayRow, EventRow, KmRow};
pub use reader::{Meta, Store, StoreError, StoredFence, StoredRoute, Vehicle};
pub use schema::{ANALYSIS_VERSION, SCHEMA_VERSION};
pub use writer::{WriteError, Writer};
