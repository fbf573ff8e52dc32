//! `flota evaluar`: the evaluation of a database against its truth log, and the F1 gate.
//!
//! Owns the verb only: whose detections (a database's, or another platform's CSV with
//! `--detecciones`), which truth log (`--verdad`, else the one beside the database), the
//! output (the Spanish table, or JSON with `--json`) and the exit code of `--f1-minimo`. The
//! scoring is `crate::evaluation`'s.

use std::io::Write;
use std::process::ExitCode;

use super::{Io, Settings};
use crate::cli::EvaluateArgs;
use crate::evaluation::{self, truth};
use crate::store::Location;

/// Prints the evaluation; exit 1 when `--f1-minimo` is given and some type falls below it.
pub fn run(args: EvaluateArgs, io: &mut Io, _settings: &Settings) -> anyhow::Result<ExitCode> {
    let evaluation = match (&args.detecciones, &args.verdad) {
        (Some(detections), Some(truth)) => {
            evaluation::run_external(detections, truth, args.tolerancia)?
        }
        _ => {
            let db = Location::parse(&args.db)?;
            // A server's database: its truth log is `<database>.verdad.jsonl` here, as
            // `flota simular` writes it, unless `--verdad` says where.
            let default_truth = || match &db {
                Location::Sqlite(path) => truth::default_path(path),
                Location::Postgres(url) => format!("{}.verdad.jsonl", url.database()).into(),
            };
            evaluation::run(&evaluation::Options {
                truth: args.verdad.unwrap_or_else(default_truth),
                db,
                tolerance_s: args.tolerancia,
            })?
        }
    };
    if args.json {
        writeln!(io.stdout, "{}", serde_json::to_string_pretty(&evaluation)?)?;
    } else {
        write!(io.stdout, "{}", evaluation.table())?;
    }
    if let Some(failure) = args.f1_minimo.and_then(|min| evaluation.gate(min)) {
        writeln!(io.stderr, "error: {failure}")?;
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
