//! Fuzzing support for flota's message handling; the harness itself is shared with the
//! corpus regression test in `tests/it/fuzz_corpus.rs`.

#[path = "harness.rs"]
pub mod harness;
