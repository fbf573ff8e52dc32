//! Fuzzing support for flota's message handling; the harness and the structured input are
//! shared with the corpus regression test in `tests/it/fuzz_corpus.rs`.

#[path = "harness.rs"]
pub mod harness;
#[path = "structured.rs"]
pub mod structured;
