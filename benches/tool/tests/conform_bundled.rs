//! `bareverbs conform` with no file replays the vectors bundled in the
//! repository (or the directory `BAREVERBS_VECTORS` names): nothing outside
//! the repository is needed.

use std::process::Command;

fn conform(vectors: Option<&std::path::Path>) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_bareverbs"));
    c.arg("conform");
    match vectors {
        Some(dir) => c.env("BAREVERBS_VECTORS", dir),
        None => c.env_remove("BAREVERBS_VECTORS"),
    };
    c.output().expect("run bareverbs")
}

#[test]
fn no_file_replays_every_bundled_vector_file() {
    let o = conform(None);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Every file of the bundled directory took part.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/vectors");
    for entry in std::fs::read_dir(&dir).expect("bundled vectors") {
        let path = entry.expect("entry").path();
        if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("txt" | "csv")
        ) {
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            assert!(out.contains(&name), "{name} was not replayed");
        }
    }
    let last = out.lines().last().expect("a summary line");
    let (passed, failed) = last
        .split_once(" passed, ")
        .expect("\"N passed, M failed\"");
    assert!(passed.parse::<u32>().expect("count") > 0, "{last}");
    assert_eq!(failed, "0 failed", "{last}");
}

#[test]
fn a_directory_without_vector_files_is_a_usage_error() {
    let empty = std::env::temp_dir().join(format!("bv-no-vectors-{}", std::process::id()));
    std::fs::create_dir_all(&empty).expect("temp dir");
    let o = conform(Some(&empty));
    std::fs::remove_dir(&empty).ok();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.starts_with("error: no vector files"), "{err}");
}

#[test]
fn a_missing_directory_is_named_with_what_to_do() {
    let gone = std::env::temp_dir().join(format!("bv-gone-{}", std::process::id()));
    let o = conform(Some(&gone));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.starts_with("error: cannot read "), "{err}");
    assert!(err.contains("BAREVERBS_VECTORS names it"), "{err}");
}
