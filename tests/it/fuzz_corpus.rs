//! The fuzz harness on stable, in `cargo test`: every committed seed and regression input in
//! `fuzz/semillas/` goes through the same checks `cargo fuzz` runs (`fuzz/src/harness.rs`),
//! so a bug the fuzzer once found stays fixed without nightly tooling in CI.

#[allow(dead_code, clippy::unwrap_used, clippy::expect_used)]
#[path = "../../fuzz/src/harness.rs"]
mod harness;

#[test]
fn committed_fuzz_inputs_keep_the_protocol_promises() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/semillas");
    let mut checked = 0;
    for target in std::fs::read_dir(&root).unwrap() {
        let target = target.unwrap().path();
        for input in std::fs::read_dir(&target).unwrap() {
            let input = input.unwrap().path();
            let bytes = std::fs::read(&input).unwrap();
            if target.ends_with("mensajes") {
                harness::check_session(&bytes);
                checked += 1;
            }
        }
    }
    assert!(
        checked >= 10,
        "only {checked} inputs under {}",
        root.display()
    );
}
