//! What the benchmarks share: the binary they measure and the machine's load beside each
//! figure. Each bench is its own crate and uses part of this, hence `dead_code` allowed.
#![allow(dead_code)]

use std::path::PathBuf;

/// The `flota` to measure: `FLOTA_BENCH_BIN` (another build, run side by side), else this one.
pub fn binary() -> PathBuf {
    std::env::var_os("FLOTA_BENCH_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_flota")), PathBuf::from)
}

/// The 1, 5 and 15 minute load averages, to print beside every timing.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
