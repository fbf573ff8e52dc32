//! The verbs of the `flota` command line, one file each, named after the verb.

pub mod analyze;
pub mod config;
pub mod routes;
pub mod serve;
pub mod simulate;
