#!/usr/bin/env bash
# Checks the instructions the DMA/MMIO barriers of core/src/platform.rs
# compile to, per architecture, against rdma-core's util/udma_barrier.h
# (ref §4.4), and the order of barriers and stores in the CQ SET_CI, CQ arm
# and send doorbell sequences; then two source rules (docs/architecture.md):
# offsets come from core::mem::offset_of! (memoffset only for span_of!), and
# the core imports `volatile`.
#
#   scripts/check-barriers.sh
#
# The core is built in release for aarch64-unknown-none, x86_64-unknown-none
# (SSE off: the asm! form of lfence/sfence) and x86_64-unknown-linux-gnu
# (the intrinsics the measured hot path uses), with
# --cfg bareverbs_barrier_probes (core/src/barrier_probes.rs: one
# #[inline(never)] function per barrier and per sequence) and
# --emit asm, into ${CARGO_TARGET_DIR:-target}/check-barriers. Each probe's
# body is reduced to a token string: its barrier instructions (dmb/dsb/
# lfence/sfence/mfence, operands included) and S for a run of stores to
# memory other than the stack, and matched against the expected pattern.
# Any `dmb ish*`, `dmb sy` or `mfence` in a probe fails, as does a call in a
# barrier probe (a barrier that is not inlined). One line per check; the
# exit status is non-zero on any mismatch. The crate is rebuilt for each
# target (its old .s removed first); a failed build is "FAIL build
# <target>" and exit 1, never a check of an earlier run's assembly.
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."
TD=${CARGO_TARGET_DIR:-target}/check-barriers
fail=0
mkdir -p "$TD"
# Every .s the checks read must be newer than this stamp.
STAMP=$(mktemp "$TD/stamp.XXXXXX")
trap 'rm -f "$STAMP"' EXIT

ok() { printf '  ok    %-40s %s\n' "$1" "$2"; }
bad() { printf '  FAIL  %-40s %s\n' "$1" "$2"; fail=1; }

# emit TARGET -> path of the assembly of the bareverbs crate for TARGET.
# The crate's old .s files and its build state (cargo clean -p) are removed
# first, so cargo rebuilds it and the path printed is this run's output;
# any failure (cargo, no .s, more than one) returns non-zero with a message
# on stderr. Called as `x=$(emit T) || ...`: errexit does not apply inside.
emit() {
  local t=$1 deps="$TD/$1/release/deps" s
  if ! rustup target list --installed 2>/dev/null | grep -qx "$t"; then
    rustup target add "$t" >&2 || return 1
  fi
  cargo clean -q -p bareverbs --release --target "$t" --target-dir "$TD" >&2 || return 1
  rm -f "$deps"/bareverbs-*.s || return 1
  cargo rustc -q -p bareverbs --release --target "$t" --target-dir "$TD" -- \
    --emit asm -C codegen-units=1 --cfg bareverbs_barrier_probes >&2 || return 1
  s=$(find "$deps" -maxdepth 1 -name 'bareverbs-*.s' -newer "$STAMP") || return 1
  if [ -z "$s" ] || [ "$(printf '%s\n' "$s" | wc -l)" -ne 1 ]; then
    echo "no single fresh bareverbs-*.s in $deps" >&2
    return 1
  fi
  printf '%s\n' "$s"
}

# build TARGET: ASM=emit's path, or a FAIL line and exit 1 (never a
# stale .s)
build() {
  ASM=$(emit "$1") || {
    printf '  FAIL  build %s (cargo rustc --emit asm failed; see above)\n' "$1"
    exit 1
  }
}

# tokens ASM PROBE -> the probe's token string (empty if the symbol is missing:
# then "MISSING")
tokens() {
  awk -v probe="$2" '
    # A memory operand that is not the stack or a constant (RIP-relative,
    # literal pool, GOT).
    function mem(o) {
      if (o ~ /\(/) return o !~ /%(rsp|rip)\)/
      if (o ~ /\[/) return o !~ /\[sp|:lo12:|:got/
      return 0
    }
    BEGIN {
      # A probe name, or a path in the crate (cmd/eq/EventQueue/poll):
      # the mangled symbol, legacy scheme.
      path = probe ~ /\// ? probe : "barrier_probes/" probe
      n = split("bareverbs/" path, seg, "/")
      re = "^_ZN"
      for (i = 1; i <= n; i++) re = re length(seg[i]) seg[i]
      re = re "17h[0-9a-f]+E:$"
    }
    $0 ~ re { inside = 1; found = 1; next }
    inside && /^\.Lfunc_end/ { inside = 0 }
    !inside { next }
    /^\t[a-z]/ {
      line = $0; sub(/^\t/, "", line); gsub(/\t/, " ", line)
      op = line; sub(/ .*/, "", op)
      tok = ""
      if (line ~ /nop/) next
      if (op ~ /^(dmb|dsb|isb|lfence|sfence|mfence)$/) tok = line
      else if (op ~ /^(call|callq|bl|blr)$/) tok = "CALL"
      else if (op ~ /^(str|strb|strh|stur|sturb|sturh|stp|stlr|stlrb|stlrh)$/) {
        if (line !~ /\[sp/) tok = "S"
      } else if (op ~ /^ld(r|ur|p|ar|apr|xr|axr|np)/) {
        # aarch64 loads: ldr*, ldur*, ldp*, ldar*, ldapr*, ldxr, ldaxr, ldnp.
        if (mem(line)) tok = "L"
      } else if (op ~ /^(cmp|test|bt)/) {
        # x86 compares read a memory operand wherever it is.
        if (mem(line)) tok = "L"
      } else if (op !~ /^(push|pop|lea|j|call|ret|prefetch)/) {
        # AT&T: a store writes its last operand, a memory operand; a
        # memory operand before it is read (mov, movzbl, movzwl, ALU).
        n = split(line, a, ", ")
        last = a[n]; sub(/^[^ ]+ /, "", last)
        if (mem(last)) tok = "S"
        else for (i = 1; i < n; i++) if (mem(a[i])) tok = "L"
      }
      if (tok == "") next
      if ((tok == "S" || tok == "L") && prev == tok) next
      out = out (out == "" ? "" : " ") tok
      prev = tok
    }
    END { if (!found) print "MISSING"; else print out }
  ' "$1"
}

# stores: the token string without its loads (L dropped, S runs merged
# again), for the store sequences.
stores() {
  awk '{ o = ""; p = ""
         for (i = 1; i <= NF; i++) {
           if ($i == "L" || ($i == "S" && p == "S")) continue
           o = o (o == "" ? "" : " ") $i; p = $i
         }
         print o }'
}

# check ASM NAME PROBE PATTERN [stores]: the token string (with "stores":
# its stores-only form) must match ^(PATTERN)$ (an extended regular
# expression; empty: no barrier, no store) and hold no inner-shareable or
# full-system barrier.
check() {
  local asm=$1 name=$2 probe=$3 want=$4 got
  got=$(tokens "$asm" "$probe")
  if [ "${5:-}" = stores ] && [ "$got" != MISSING ]; then
    got=$(printf '%s\n' "$got" | stores)
  fi
  if [ "$got" = MISSING ]; then
    bad "$name" "probe symbol $probe not found"
  elif printf '%s' "$got" | grep -Eq 'dmb ish|dmb sy|dsb sy|mfence'; then
    bad "$name" "[$got] has an inner-shareable/full barrier"
  elif [[ $got =~ ^($want)$ ]]; then
    ok "$name" "[$got]"
  else
    bad "$name" "[$got], want /$want/"
  fi
}

echo "aarch64-unknown-none (rdma-core: dmb oshst / dmb oshld / dsb st)"
build aarch64-unknown-none
a=$ASM
check "$a" to_device_barrier to_device 'dmb oshst'
check "$a" ordering_write_barrier ordering_write 'dmb oshst'
check "$a" from_device_barrier from_device 'dmb oshld'
check "$a" release_to_device_barrier release_to_device 'dmb osh'
check "$a" mmio_wc_start mmio_wc_start 'dsb st'
check "$a" mmio_flush_writes mmio_flush_writes 'dsb st'
check "$a" "cq publish_ci (barrier, SET_CI)" cq_publish_ci 'dmb osh S' stores
check "$a" "cq arm (rec, wc_start, db, flush)" cq_arm 'S dsb st S dsb st' stores
check "$a" "sq doorbell (bar, rec, wc_start, ...)" sq_ring_doorbell 'dmb oshst S dsb st( S| CALL| dsb st)* dsb st( S)?' stores
# Reads: an ownership load (L), dmb oshld, the entry's loads. O: any token
# but the read barrier, so each pattern fixes how many there are.
O='(L|S|CALL|dmb osh|dmb oshst|dsb st)'
check "$a" "cq lean poll (3 owner tests)" cq_poll_lean \
  "($O )*L dmb oshld L( $O)* L dmb oshld L( $O)* dmb oshld( $O)*"
check "$a" "cq poll (owner, barrier, CQE)" cq_poll "L dmb oshld L( $O)*"
check "$a" "cq peek (owner, barrier, CQE)" cq_peek "L dmb oshld L( $O)*"
check "$a" "cmd complete (barrier, output)" cmd/queue/CmdQueue/complete "($O )*L dmb oshld L( $O)*"
check "$a" "eq poll (owner, barrier, dma_read)" cmd/eq/EventQueue/poll "L dmb oshld CALL( $O)*"
# Writes (stores only): the data, dmb oshst, the record / ownership byte.
W='(S|CALL|dmb osh|dmb oshld|dsb st)'
check "$a" "rq post (WQEs, barrier, record)" rq_post "S( S| CALL)* dmb oshst S( CALL)*" stores
check "$a" "srq post (WQEs, barrier, record)" srq_post "S( S| CALL)* dmb oshst S( CALL)*" stores
check "$a" "cmd post (entry, bar, own, bar, db)" cmd_post \
  "($W )*CALL dmb oshst S dmb oshst S( $W)*" stores
check "$a" "eq update_ci (doorbell, barrier)" eq_update_ci 'S dmb oshst' stores

for t in x86_64-unknown-linux-gnu x86_64-unknown-none; do
  echo "$t (rdma-core: compiler barrier / lfence / sfence)"
  build "$t"
  x=$ASM
  check "$x" to_device_barrier to_device ''
  check "$x" ordering_write_barrier ordering_write ''
  check "$x" from_device_barrier from_device 'lfence'
  check "$x" release_to_device_barrier release_to_device ''
  check "$x" mmio_wc_start mmio_wc_start 'sfence'
  check "$x" mmio_flush_writes mmio_flush_writes 'sfence'
  check "$x" "cq publish_ci (SET_CI)" cq_publish_ci 'S' stores
  check "$x" "cq arm (rec, wc_start, db, flush)" cq_arm 'S sfence S sfence' stores
  check "$x" "sq doorbell (rec, wc_start, ...)" sq_ring_doorbell 'S sfence( S| CALL| sfence)* sfence( S)?' stores
  O='(L|S|CALL|sfence)'
  # The lean loop's third owner test (a lane run's pending entry) shares
  # its lfence with the second where LLVM merges the two (linux-gnu).
  check "$x" "cq lean poll (owner tests)" cq_poll_lean \
    "($O )*L lfence L( $O)* L lfence L( $O)*( lfence( $O)*)?"
  check "$x" "cq poll (owner, barrier, CQE)" cq_poll "L lfence L( $O)*"
  check "$x" "cq peek (owner, barrier, CQE)" cq_peek "L lfence L( $O)*"
  check "$x" "cmd complete (barrier, output)" cmd/queue/CmdQueue/complete "($O )*L lfence L( $O| lfence)*"
  check "$x" "eq poll (owner, barrier, dma_read)" cmd/eq/EventQueue/poll "L lfence CALL( $O)*"
  # to_device / ordering_write are compiler barriers: no instruction.
  check "$x" "rq post (WQEs, record)" rq_post "S( S| CALL)*" stores
  check "$x" "srq post (WQEs, record)" srq_post "S( S| CALL)*" stores
  check "$x" "cmd post (entry, own, db)" cmd_post "S( S| CALL)*" stores
  check "$x" "eq update_ci (doorbell)" eq_update_ci 'S' stores
done

echo "source rules (docs/architecture.md)"
if git grep --untracked -nE 'memoffset::offset_of|use memoffset::\{?[^}]*offset_of' -- '*.rs' >/dev/null; then
  bad "offset_of! from core::mem" "$(git grep --untracked -nE 'memoffset::offset_of|use memoffset::\{?[^}]*offset_of' -- '*.rs' | head -3 | tr '\n' ' ')"
else
  ok "offset_of! from core::mem" "memoffset only for span_of!"
fi
eqdb=$(git grep --untracked -nE 'EQ_DOORBELL_(NO_)?ARM' -- 'core/src/*.rs' ':!core/src/platform.rs' ':!core/src/cmd/eq.rs' || true)
if [ -z "$eqdb" ]; then
  ok "EQ doorbells via update_ci" "EQ_DOORBELL_* only in platform.rs, cmd/eq.rs"
else
  bad "EQ doorbells via update_ci" "$(printf '%s' "$eqdb" | head -3 | tr '\n' ' ')"
fi
if git grep --untracked -qE '^use volatile::|[^a-z_]volatile::(VolatilePtr|access)' -- 'core/src/*.rs'; then
  ok "core uses volatile" "$(git grep --untracked -lE 'volatile::(VolatilePtr|access)' -- 'core/src/*.rs' | wc -l) files"
else
  bad "core uses volatile" "no import of volatile in core/src"
fi

exit $fail
