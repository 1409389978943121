//! The JSON envelope every `--json` output of the tool carries: a
//! top-level `"schema": "bareverbs/1"` and `"command"`, the subcommand
//! path (`"devinfo"`, `"decode cqe"`, `"perf post"` …). The keys of each
//! command's object are listed in `docs/json-commands.md`; tests compare
//! every command's output with that list. Values a device or backend
//! cannot know are `null`, never 0.

use serde_json::{Map, Value};

/// The schema name and version (`"schema"`).
pub const SCHEMA: &str = "bareverbs/1";

/// `body` (a JSON object; anything else is put under `"result"`) with
/// `schema` and `command` added.
pub fn envelope(command: &str, body: Value) -> Value {
    let mut m = match body {
        Value::Object(m) => m,
        other => {
            let mut m = Map::new();
            m.insert("result".into(), other);
            m
        }
    };
    m.insert("schema".into(), SCHEMA.into());
    m.insert("command".into(), command.into());
    Value::Object(m)
}

/// [`envelope`] of a serializable value.
pub fn envelope_of<T: serde::Serialize>(command: &str, v: &T) -> serde_json::Result<Value> {
    Ok(envelope(command, serde_json::to_value(v)?))
}

/// Key paths of a JSON value, as `docs/json-commands.md` lists them: an
/// object member is `parent.key`, the members of objects inside an array
/// `parent[].key`; arrays and objects are listed themselves too.
pub fn key_paths(v: &Value) -> std::collections::BTreeSet<String> {
    fn walk(v: &Value, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                for (k, c) in m {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    out.insert(p.clone());
                    walk(c, &p, out);
                }
            }
            Value::Array(a) => {
                for c in a {
                    if c.is_object() {
                        walk(c, &format!("{prefix}[]"), out);
                    }
                }
            }
            _ => {}
        }
    }
    let mut out = Default::default();
    walk(v, "", &mut out);
    out
}

/// The documented keys of `command` in `docs/json-commands.md`: the
/// section headed `` ## `command` `` holds a table whose first column is a
/// key path in backticks and whose third says `yes` when the key is
/// always present. Returns (always present, optional). Panics (a test
/// helper) when the section or its table is missing or malformed.
pub fn documented(command: &str) -> (Vec<String>, Vec<String>) {
    // Read at run time (a test helper): the document lives in the
    // repository's docs/, outside this package.
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json-commands.md");
    let doc = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let doc = doc.as_str();
    let head = format!("## `{command}`");
    let start = doc
        .lines()
        .position(|l| l.trim() == head)
        .unwrap_or_else(|| panic!("docs/json-commands.md has no section {head}"));
    let (mut always, mut optional) = (Vec::new(), Vec::new());
    for l in doc.lines().skip(start + 1) {
        if l.starts_with("## ") {
            break;
        }
        let cols: Vec<&str> = l.split('|').map(str::trim).collect();
        if cols.len() < 5 || !cols[1].starts_with('`') {
            continue;
        }
        let key = cols[1].trim_matches('`').to_string();
        match cols[3] {
            "yes" => always.push(key),
            "no" => optional.push(key),
            o => panic!("{command} {key}: third column must be yes or no, not {o:?}"),
        }
    }
    assert!(!always.is_empty(), "no keys documented for {command}");
    (always, optional)
}

/// Asserts `v` is `command`'s envelope with exactly the documented keys:
/// every key present is documented, every always-present key is there
/// (a test helper: panics otherwise).
pub fn assert_documented(command: &str, v: &Value) {
    assert_eq!(v["schema"], SCHEMA, "{command}");
    assert_eq!(v["command"], command);
    let (always, optional) = documented(command);
    let got = key_paths(v);
    for k in &got {
        assert!(
            always.contains(k) || optional.contains(k),
            "{command}: key {k} is not in docs/json-commands.md"
        );
    }
    for k in &always {
        assert!(got.contains(k), "{command}: documented key {k} is missing");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn envelope_and_paths() {
        let v = envelope("x", json!({"a": 1, "b": [{"c": null}], "d": {"e": [1, 2]}}));
        assert_eq!(v["schema"], "bareverbs/1");
        assert_eq!(v["command"], "x");
        let p: Vec<String> = key_paths(&v).into_iter().collect();
        assert_eq!(
            p,
            ["a", "b", "b[].c", "command", "d", "d.e", "schema"]
                .map(String::from)
                .to_vec()
        );
        assert_eq!(envelope("y", json!([1]))["result"], json!([1]));
    }
}
