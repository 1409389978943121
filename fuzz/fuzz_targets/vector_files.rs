//! Vector files given to `bareverbs conform` on arbitrary input: see
//! `bareverbs_bench::conform::fuzz`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| bareverbs_bench::conform::fuzz::vector_files(data));
