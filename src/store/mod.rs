//! The SQLite database: its schema, the writer used by `flota simular`, and (to come) the
//! read-only reader the server uses.
//!
//! Owns every SQL statement. Nothing outside this module builds SQL.

pub mod schema;
pub mod writer;

pub use schema::SCHEMA_VERSION;
pub use writer::{WriteError, Writer};
