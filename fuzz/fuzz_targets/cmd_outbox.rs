#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| bareverbs_sim::fw::fuzz::cmd_outbox(data));
