//! Structure-aware: well-formed JSON-RPC envelopes (`flota_fuzz::structured`) around the
//! methods, tools, argument names and value shapes flota knows.
#![no_main]

use flota_fuzz::structured::{Message, session};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|messages: Vec<Message>| {
    flota_fuzz::harness::check_session(&session(&messages));
});
