//! `bareverbs completions SHELL`: a script for each shell clap_complete
//! knows, on stdout; an unknown shell is a usage error.

use std::process::{Command, Output};

fn bareverbs(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bareverbs"))
        .args(args)
        .output()
        .expect("run bareverbs")
}

#[test]
fn every_shell_gets_a_script() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = bareverbs(&["completions", shell]);
        let script = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{shell}: {o:?}");
        assert!(o.stderr.is_empty(), "{shell}: {o:?}");
        for word in ["bareverbs", "pingpong", "write-lat", "completions"] {
            assert!(script.contains(word), "{shell}: {word} missing");
        }
    }
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let o = bareverbs(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("possible values"));
}
