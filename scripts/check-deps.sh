#!/usr/bin/env bash
# The dependency promises of the tool and the workspace, checked so they
# cannot regress silently:
# - nothing reaches outside the repository (the README's two commands work
#   on a fresh clone with nothing beside it);
# - toml is parsed without toml_edit (toml 1.x, parse + serde only);
# - one bitflags major in the workspace, except where a required crate
#   (vfio-ioctls, through vmm-sys-util, whose newest release still asks
#   for bitflags 1) brings the other: that crate is the only one allowed.
# The dependency graph comes from `cargo metadata` (the host platform, normal,
# build and dev edges); a cargo failure fails the check.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0

outside=$(git grep -n -E '\.\./shared|\.\./\.\./shared' -- ':!*.md' || true)
if [ -n "$outside" ]; then
  echo "FAIL  code or scripts read outside the repository:"; echo "$outside"; fail=1
else
  echo "ok    nothing reads outside the repository"
fi

meta=$(mktemp)
trap 'rm -f "$meta"' EXIT
host=$(rustc -vV | sed -n "s/^host: //p")
cargo metadata --quiet --format-version 1 --locked --filter-platform "$host" >"$meta"
python3 - "$meta" <<'PY' || fail=1
import json, sys
m = json.load(open(sys.argv[1]))
pkgs = {p["id"]: p for p in m["packages"]}
nodes = m["resolve"]["nodes"]
bad = 0
def name(i): return pkgs[i]["name"]
def major(i):
    v = pkgs[i]["version"].split(".")
    return v[0] if v[0] != "0" else "0." + v[1]
present = {name(n["id"]) for n in nodes}
if "toml_edit" in present:
    print("FAIL  toml_edit is in the build (toml with only parse + serde needs none)")
    bad = 1
else:
    print("ok    no toml_edit")
allowed = {"vmm-sys-util"}
majors = sorted({major(n["id"]) for n in nodes if name(n["id"]) == "bitflags"})
parents = {}
for n in nodes:
    for d in n["deps"]:
        if name(d["pkg"]) == "bitflags":
            parents.setdefault(major(d["pkg"]), set()).add(name(n["id"]))
newest = max(majors, key=lambda v: [int(x) for x in v.split(".")]) if majors else None
others = {v: ps for v, ps in parents.items() if v != newest}
stray = {v: sorted(ps - allowed) for v, ps in others.items() if ps - allowed}
if stray:
    for v, ps in stray.items():
        print(f"FAIL  bitflags {v} pulled by: {', '.join(ps)} (only {', '.join(sorted(allowed))} may use another major than {newest})")
    bad = 1
else:
    via = "; ".join(f"bitflags {v} only through {', '.join(sorted(ps))}" for v, ps in others.items())
    print(f"ok    one bitflags major ({newest}){' but ' + via if via else ''}")
sys.exit(bad)
PY
exit "$fail"
