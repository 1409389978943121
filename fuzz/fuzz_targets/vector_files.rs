//! Vector files given to `bareverbs conform` on arbitrary input: see
//! `bareverbs_conformance::conform::fuzz`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| bareverbs_conformance::conform::fuzz::vector_files(data));
