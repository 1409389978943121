#!/usr/bin/env bash
# The dependency promises of the tool and the workspace (issue: lighter
# dependencies), checked so they cannot regress silently:
# - nothing reaches outside the repository (the README's two commands work
#   on a fresh clone with nothing beside it);
# - toml is parsed without toml_edit (toml 1.x, parse + serde only);
# - one bitflags major in the workspace, except where a required crate
#   (vfio-ioctls, through vmm-sys-util, whose newest release still asks
#   for bitflags 1) brings the other: that crate is the only one allowed.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0

outside=$(git grep -n -E '\.\./shared|\.\./\.\./shared' -- ':!*.md' ':!CHANGELOG.md' || true)
if [ -n "$outside" ]; then
  echo "FAIL  code or scripts read outside the repository:"; echo "$outside"; fail=1
else
  echo "ok    nothing reads outside the repository"
fi

tree() { cargo tree --workspace -e normal,build,dev "$@" 2>/dev/null; }
if tree -i toml_edit >/dev/null; then
  echo "FAIL  toml_edit is in the build (toml with only parse + serde needs none):"
  tree -i toml_edit --prefix none | sort -u
  fail=1
else
  echo "ok    no toml_edit"
fi

allowed="vmm-sys-util"
parents=$(tree -i bitflags@1 --depth 1 --prefix none | tail -n +2 | awk '{print $1}' | sort -u || true)
bad=$(comm -23 <(printf '%s\n' $parents | sed '/^$/d') <(printf '%s\n' $allowed))
if [ -n "$bad" ]; then
  echo "FAIL  bitflags 1 pulled by: $bad (only $allowed may, until it moves to bitflags 2)"; fail=1
else
  echo "ok    one bitflags major (bitflags 1 only through: ${parents:-nothing})"
fi
exit "$fail"
