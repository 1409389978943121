//! `--json` is exactly the schema docs/json.md documents.

use super::*;

/// The leaf keys of a perf JSON object: nested objects by dotted path,
/// arrays of objects as `[]`, `device_counters` (a map) as one leaf.
fn leaves(v: &serde_json::Value, path: &str, out: &mut std::collections::BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) if !path.ends_with("device_counters") => {
            for (k, x) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                leaves(x, &p, out);
            }
        }
        serde_json::Value::Array(a) if a.first().is_some_and(|x| x.is_object()) => {
            for x in a {
                leaves(x, &format!("{path}[]"), out);
            }
        }
        _ => {
            out.insert(path.to_string());
        }
    }
}

/// The keys docs/json.md documents (its "Envelope" and "perf" tables),
/// without the rows that only name an object whose keys follow.
fn documented_keys() -> std::collections::BTreeSet<String> {
    // Read at run time: the document lives in the repository's docs/,
    // outside this package (an include_str! would not build from the
    // published crate).
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json.md");
    let doc = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut keys = std::collections::BTreeSet::new();
    let mut section = "";
    for line in doc.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            section = if h == "Envelope" || h == "perf" {
                "in"
            } else {
                ""
            };
            continue;
        }
        if section.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("| `") {
            if let Some(end) = rest.find('`') {
                keys.insert(rest[..end].to_string());
            }
        }
    }
    let all = keys.clone();
    keys.retain(|k| !all.iter().any(|o| o.starts_with(&format!("{k}."))));
    keys
}

/// `--json` is one versioned schema: every backend prints exactly the
/// keys docs/json.md lists, for bandwidth and latency tests, and for
/// a failed run; unknowns are null, perftest's test names.
#[test]
fn json_keys_are_the_documented_schema() {
    let doc = documented_keys();
    assert!(
        doc.contains("schema") && doc.contains("results[].bw_avg"),
        "{doc:?}"
    );
    for dev in ["sim", "fw-sim", "model"] {
        for (t, v) in [
            (PerfTest::WriteBw, vec!["-n", "100"]),
            (PerfTest::ReadLat, vec!["-n", "100"]),
            (PerfTest::WriteBw, vec!["-n", "100", "--loss", "1"]),
        ] {
            let mut a = vec!["--device", dev];
            a.extend(v.iter().copied());
            let (j, _) = json(t, &a);
            let mut got = std::collections::BTreeSet::new();
            leaves(&j, "", &mut got);
            assert_eq!(got, doc, "{dev} {t:?} {v:?}");
            assert_eq!(j["schema"], "bareverbs/1");
            assert_eq!(
                j["command"],
                format!("perf {}", crate::perf::engine::test_name(t))
            );
            assert_eq!(j["test"], perftest_name(t));
        }
        // Unknowns are null, not 0: a latency test has no BW figures.
        let (j, _) = json(PerfTest::ReadLat, &["--device", dev, "-n", "100"]);
        assert!(j["results"][0]["bw_avg"].is_null(), "{j}");
        assert!(j["results"][0]["t_avg_usec"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(perftest_name(PerfTest::WriteBw), "ib_write_bw");
    // A backend that could not be opened: the same envelope, no results.
    let f: serde_json::Value =
        serde_json::from_str(&failure_json(PerfTest::WriteBw, &args(&[]), "x")).unwrap();
    assert_eq!(
        (f["schema"].as_str(), f["verdict"].as_str()),
        (Some("bareverbs/1"), Some("fail"))
    );
    assert!(f["backend"].is_null() && f["results"].as_array().unwrap().is_empty());
}
