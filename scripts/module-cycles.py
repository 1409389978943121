#!/usr/bin/env python3
"""Import cycles between the modules of each crate.

A module is a file (`foo.rs` or `foo/mod.rs`). Module A depends on module B
when A's code names a path inside B (`crate::b::…`, `super::b::…`,
`self::b::…`, or a `use` of those). References to one's own ancestors or
descendants are not counted (a parent re-exports its children; a child may
use its parent's items). A cycle is a strongly connected group of two or
more modules. Exits 1 when any crate has one.

Usage: scripts/module-cycles.py [CRATE_SRC_DIR ...]   (default: every crate)
"""
import os
import re
import sys

DEFAULT = ["core/src", "sim/src", "vfio-host/src", "benches/src", "benches/tool/src", "conformance/src"]


def modules(src):
    mods = {}
    for dp, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dp, f), src)[:-3].split(os.sep)
            if rel[-1] == "mod":
                rel = rel[:-1]
            if rel == ["lib"]:
                rel = []
            elif rel == ["main"]:
                # A binary root beside a library root is its own crate:
                # give it its own node so neither replaces the other.
                has_lib = os.path.exists(os.path.join(src, "lib.rs"))
                rel = ["<main>"] if has_lib else []
            mods[tuple(rel)] = os.path.join(dp, f)
    return mods


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(l.split("//")[0] for l in text.split("\n"))


def expand_uses(text):
    """`use a::{b, c::{d}}` -> ["a::b", "a::c::d"] (roughly)."""
    out = []
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        stack = [m.group(1).replace("\n", " ")]
        while stack:
            u = stack.pop()
            i = u.find("{")
            if i < 0:
                out.append(u.strip())
                continue
            prefix, rest = u[:i], u[i + 1 : u.rfind("}")]
            depth, cur, parts = 0, "", []
            for ch in rest:
                if ch == "," and depth == 0:
                    parts.append(cur)
                    cur = ""
                    continue
                depth += ch == "{"
                depth -= ch == "}"
                cur += ch
            parts.append(cur)
            stack.extend(prefix + p.strip() for p in parts if p.strip())
    return out


def refs(mod, text):
    paths = expand_uses(text)
    paths += re.findall(r"\b((?:crate|super|self)(?:::\w+)+)", text)
    for p in paths:
        segs = [s.strip() for s in p.split("::")]
        base = []
        if segs[0] == "crate":
            segs = segs[1:]
        elif segs[0] in ("super", "self"):
            base = list(mod)
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super" and base:
                    base.pop()
                segs = segs[1:]
        else:
            continue
        yield tuple(base + segs)


def resolve(path, mods):
    for n in range(len(path), 0, -1):
        if path[:n] in mods:
            return path[:n]
    return None


def related(a, b):
    return a[: len(b)] == b or b[: len(a)] == a


def sccs(graph):
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def main():
    roots = sys.argv[1:] or DEFAULT
    bad = 0
    for src in roots:
        mods = modules(src)
        if not mods:
            print(f"{src}: no Rust sources (a moved crate?)")
            bad = 1
            continue
        graph = {m: set() for m in mods}
        for m, path in mods.items():
            text = strip_comments(open(path, encoding="utf-8").read())
            for r in refs(m, text):
                t = resolve(r, mods)
                if t is not None and t != m and not related(m, t):
                    graph[m].add(t)
        cycles = [c for c in sccs(graph) if len(c) > 1]
        name = lambda m: "::".join(m) or "<root>"
        if cycles:
            bad = 1
            for c in cycles:
                print(f"{src}: cycle among {', '.join(sorted(name(m) for m in c))}")
        else:
            print(f"{src}: {len(mods)} modules, no import cycle")
    sys.exit(bad)


if __name__ == "__main__":
    main()
