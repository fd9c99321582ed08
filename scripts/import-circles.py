#!/usr/bin/env python3
"""Import circles inside the folders of src/.

usage: scripts/import-circles.py [--graph]

For each folder of src/ (src/ itself included), the folder's direct children (its files and its
subfolders) and which of them each imports, through `crate::...`, `super::...` or `self::...`
paths anywhere in its code (comments and `#[cfg(test)] mod tests` blocks left out). An import of
anything inside a child counts as an import of that child. Prints every circle among a folder's
children, one line each (`circle sweep: a <-> b`); with --graph, every folder's imports first.
Exits 1 if there is a circle, 0 if there is none.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent / "src"


def module_of(path):
    """The module path of a source file: src/a/b.rs and src/a/b/mod.rs are ("a", "b")."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def code_of(path):
    """The file's code: line comments removed, and its test module (to the end) left out."""
    text = re.sub(r"//[^\n]*", "", path.read_text(errors="replace"))
    tests = re.search(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s*)?mod\s+tests\s*\{", text)
    return text[: tests.start()] if tests else text


def paths_in(code):
    """Every path that starts at crate, super or self, with `{...}` groups expanded one level."""
    for m in re.finditer(r"\b((?:crate|self|super)(?:::[A-Za-z_][A-Za-z0-9_]*)*)::(\{[^{}]*\}|[A-Za-z_][A-Za-z0-9_]*)", code):
        head, tail = m.group(1).split("::"), m.group(2)
        if tail.startswith("{"):
            for item in tail[1:-1].split(","):
                item = item.strip().split(" as ")[0]
                if item and item != "self":
                    yield head + [s for s in item.split("::") if s and s != "{" and s != "}"]
                elif item == "self":
                    yield head
        else:
            yield head + [tail]


def resolve(me, is_mod_file, segments, known):
    """The module a path names (the longest known prefix), from module `me`."""
    base = list(me)
    rest = list(segments)
    if rest[0] == "crate":
        base, rest = [], rest[1:]
    else:
        # A file module's `super` is its folder's module; a mod.rs's `self` is its folder.
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
    full = base + rest
    for n in range(len(full), -1, -1):
        if tuple(full[:n]) in known:
            return tuple(full[:n])
    return None


def main():
    files = sorted(ROOT.rglob("*.rs"))
    known = {module_of(p) for p in files}
    known |= {m[:i] for m in known for i in range(len(m))}
    edges = {}  # folder -> {child: set(children)}
    for path in files:
        me = module_of(path)
        for segments in paths_in(code_of(path)):
            target = resolve(me, path.name == "mod.rs", segments, known)
            if target is None:
                continue
            # Every folder holding both, through two different children of it.
            for depth in range(min(len(me), len(target))):
                if me[:depth] != target[:depth]:
                    break
                a, b = me[depth] if depth < len(me) else None, target[depth]
                if a is None or a == b:
                    continue
                folder = "/".join(me[:depth]) or "src"
                edges.setdefault(folder, {}).setdefault(a, set()).add(b)
                break
    if "--graph" in sys.argv:
        for folder in sorted(edges):
            for child in sorted(edges[folder]):
                print(f"{folder}: {child} -> {' '.join(sorted(edges[folder][child]))}")
    circles = []
    for folder in sorted(edges):
        for group in cycles(edges[folder]):
            circles.append(f"circle {folder}: {' <-> '.join(sorted(group))}")
    for line in circles:
        print(line)
    print(f"import circles inside folders: {len(circles)}")
    return 1 if circles else 0


def cycles(graph):
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

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
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


if __name__ == "__main__":
    sys.exit(main())
