#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| bareverbs_sim::fuzzing::hostile::hostile_cq(data));
