//! The `bareverbs` tool's argument parsers on arbitrary input: the hex
//! parser behind `decode wqe|cqe` and the perftest-style size and count
//! parsers must return an error, never panic; an accepted size must read
//! back from its decimal and hex spellings.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(bytes) = bareverbs_tool::decode::parse_hex(&text) {
        let again: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(bareverbs_tool::decode::parse_hex(&again).unwrap(), bytes);
    }
    for suffix in [true, false] {
        if let Ok(v) = bareverbs_tool::args::parse_int(&text, suffix) {
            assert_eq!(bareverbs_tool::args::parse_int(&v.to_string(), false), Ok(v));
            assert_eq!(bareverbs_tool::args::parse_int(&format!("0x{v:x}"), false), Ok(v));
        }
    }
    let _ = bareverbs_tool::args::message_size(&text);
    let _ = bareverbs_tool::args::positive_u32(&text);
});
