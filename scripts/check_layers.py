#!/usr/bin/env python3
"""Checks that the code's layers point one way.

1. The folder-level include graph of src/ (two levels deep: src/master/sql, src/query/plan,
   src/node, ...) and of power/ has no cycle.
2. Every include of a header of another CMake library is an edge the build states: the
   including file's library links the header's library (directly or through PUBLIC links).

A header belongs to the library that compiles the .cc of the same name, else to the library
with the most sources in the header's folder. Tests, benchmarks and fuzz targets are not
checked (they may link anything). Prints the folder graph with --graph. Exit status 1 on a
violation, with one line per offending include.
"""
import argparse
import collections
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
TOPS = ("src", "power")


def folder(path):
    """src/master/sql/x.h -> master/sql; power/meters/x.cc -> power/meters; two levels."""
    parts = path.split("/")[:-1]
    if parts and parts[0] == "src":
        parts = parts[1:]
    return "/".join(parts[:2]) if parts else "."


def resolve(inc, root):
    for base in ("src", ""):
        p = os.path.normpath(os.path.join(base, inc))
        if os.path.exists(os.path.join(root, p)):
            return p
    return None


def source_files(root):
    for top in TOPS:
        for dp, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith((".h", ".cc", ".c")) and not f.endswith("_test.cc"):
                    yield os.path.relpath(os.path.join(dp, f), root)


def cmake_targets(root):
    """Returns ({source path: target}, {target: set of linked targets})."""
    sources, links = {}, collections.defaultdict(set)
    call = re.compile(r"\b(add_library|add_executable|target_link_libraries|target_sources)\s*\(([^)]*)\)", re.S)
    for top in TOPS:
        for dp, _, files in os.walk(os.path.join(root, top)):
            if "CMakeLists.txt" not in files:
                continue
            text = re.sub(r"#[^\n]*", "", open(os.path.join(dp, "CMakeLists.txt")).read())
            for kind, args in call.findall(text):
                words = args.split()
                if not words:
                    continue
                name, rest = words[0], words[1:]
                if kind in ("add_library", "add_executable", "target_sources"):
                    for w in rest:
                        if re.search(r"\.(cc|c)$", w) and "$" not in w:
                            sources[os.path.relpath(os.path.join(dp, w), root)] = name
                else:
                    links[name].update(w for w in rest if w not in ("PUBLIC", "PRIVATE", "INTERFACE"))
    return sources, links


def header_owner(header, sources):
    stem = os.path.splitext(header)[0]
    for ext in (".cc", ".c"):
        if stem + ext in sources:
            return sources[stem + ext]
    d = os.path.dirname(header)
    votes = collections.Counter(t for s, t in sources.items() if os.path.dirname(s) == d)
    return votes.most_common(1)[0][0] if votes else None


def reachable(target, links):
    seen, todo = set(), [target]
    while todo:
        t = todo.pop()
        for n in links.get(t, ()):
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


def cycles(graph):
    """Strongly connected components with more than one folder (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

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
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--graph", action="store_true", help="print the folder-level include graph")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    sources, links = cmake_targets(root)
    graph = collections.defaultdict(collections.Counter)
    problems = []
    for f in sorted(source_files(root)):
        text = open(os.path.join(root, f), errors="replace").read()
        owner = sources.get(f) or header_owner(f, sources)
        for inc in INCLUDE.findall(text):
            if inc.endswith(".capnp.h"):
                continue
            h = resolve(inc, root)
            if h is None:
                continue
            a, b = folder(f), folder(h)
            if a != b:
                graph[a][b] += 1
            target = header_owner(h, sources)
            if owner and target and owner != target and target not in reachable(owner, links):
                problems.append(f"{f}: includes {inc} of {target}, which {owner} does not link")
    if args.graph:
        for a in sorted(graph):
            print(f"{a} -> " + ", ".join(f"{b} ({n})" for b, n in sorted(graph[a].items())))
    for comp in cycles(graph):
        problems.append("include cycle between folders: " + " <-> ".join(comp))
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"layers ok: {len(graph)} folders, {sum(len(v) for v in graph.values())} edges, no cycle; "
          f"every include across libraries is a link")
    return 0


if __name__ == "__main__":
    sys.exit(main())
