//! Raw bytes as a client's stdin: any line, any encoding, any length.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    flota_fuzz::harness::check_session(data);
});
