#!/usr/bin/env python3
"""Checks that vgpu.ko's host files (kmod/*.c, kmod/*.h; not the filter core in kmod/core/) keep
the layers kmod/layers.txt declares: a file may include a header of, and use a function or
variable defined in, only its own part or a part of a lower rank. Parts of one rank sit beside
each other and do not touch. Also fails on:
  - a file of kmod/ that no part lists, or a listed file that does not exist;
  - a header that declares a function defined in another part (one header per part, so that no
    shared header hides who calls whom);
  - a cycle between parts (printed as the circle it is).

usage: check_layers.py KMOD_DIR [--layers FILE]
exit: 0 clean, 1 a violation (each printed as file:line: what), 2 bad usage or table.
"""
import argparse
import os
import re
import sys

SYMBOL = r"vgpu_\w+"


def strip_comments_and_strings(text, keep_strings=False):
    """Blanks comments and (unless @keep_strings) string/char literals, keeping line numbers."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'" and not keep_strings:
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c if j - i >= 2 else text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


# A function definition in kernel style: its name before the parameter list, the body's brace at
# the start of the next line. The return type may not contain parentheses or statements.
DEF_FN = re.compile(r"^(?!static\b|extern\b|typedef\b|#)[A-Za-z_][\w \t\*]*?\b(" + SYMBOL +
                    r")\s*\([^;{}]*?\)\s*\n\{", re.M)
STATIC_INLINE = re.compile(r"^static\s+(?:__always_inline\s+)?inline\b[^;{}(]*?\b(" + SYMBOL +
                           r")\s*\([^;{}]*?\)\s*\n\{", re.M)
# A variable defined at file scope, not static: "type vgpu_x = ...;", "type vgpu_x;",
# DEFINE_MUTEX(vgpu_x), LIST_HEAD(vgpu_x).
DEF_VAR = re.compile(r"^(?!static\b|extern\b|typedef\b|#)(?:[A-Za-z_][\w \t\*]*?\b(" + SYMBOL +
                     r")\s*(?:\[[^\]]*\])?\s*(?:__\w+\s*)?(?:=|;)|(?:DEFINE_\w+|LIST_HEAD)\((" +
                     SYMBOL + r")\))", re.M)
# A prototype in a header: "type vgpu_x(...);" at file scope.
PROTO = re.compile(r"^(?!static\b|#)[A-Za-z_][\w \t\*]*?\b(" + SYMBOL + r")\s*\([^;{}]*?\)\s*;",
                   re.M)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
USE = re.compile(r"\b(" + SYMBOL + r")\b")


def read_table(path):
    """rank part: files... -> {file: (rank, part)}, {part: rank}"""
    owner, ranks = {}, {}
    with open(path) as f:
        for no, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.match(r"^(\d+)\s+([\w-]+):\s*(.*)$", line)
            if not m:
                sys.exit(f"{path}:{no}: expected 'RANK PART: FILE...', got: {raw.rstrip()}")
            rank, part, files = int(m.group(1)), m.group(2), m.group(3).split()
            if part in ranks:
                sys.exit(f"{path}:{no}: part {part} listed twice")
            ranks[part] = rank
            for name in files:
                if name in owner:
                    sys.exit(f"{path}:{no}: {name} is in {owner[name][1]} already")
                owner[name] = (rank, part)
    return owner, ranks


def find_cycles(edges):
    """Every elementary cycle's parts, one per strongly connected component (Tarjan)."""
    index, low, stack, on, comps = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
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
                comps.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return comps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kmod")
    ap.add_argument("--layers")
    args = ap.parse_args()
    kmod = os.path.realpath(args.kmod)
    owner, ranks = read_table(args.layers or os.path.join(kmod, "layers.txt"))
    errors = []

    present = sorted(f for f in os.listdir(kmod)
                     if f.endswith((".c", ".h")) and os.path.isfile(os.path.join(kmod, f)))
    for f in present:
        if f not in owner:
            errors.append(f"kmod/{f}:1: in no part of layers.txt (place it in the layer it is)")
    for f in sorted(owner):
        if f not in present:
            errors.append(f"layers.txt: {f} is listed but does not exist")
    files = [f for f in present if f in owner]

    texts, includes = {}, {}
    for f in files:
        with open(os.path.join(kmod, f)) as fh:
            raw = fh.read()
        texts[f] = strip_comments_and_strings(raw)
        code = strip_comments_and_strings(raw, keep_strings=True)
        includes[f] = [(line_of(code, m.start()), os.path.normpath(m.group(1)))
                       for m in INCLUDE.finditer(code)]

    defined = {}  # symbol -> file
    for f in files:
        pats = (DEF_FN, DEF_VAR) if f.endswith(".c") else (STATIC_INLINE, DEF_VAR)
        for pat in pats:
            for m in pat.finditer(texts[f]):
                name = next(g for g in m.groups() if g)
                head = texts[f][m.start():m.start(1 if m.group(1) else 2)].split()
                if pat is DEF_VAR and head and head[-1] in ("struct", "enum", "union"):
                    continue  # a forward declaration, not a variable
                defined.setdefault(name, f)

    part_edges = {}  # part -> {part: first "file:line: what"}

    def edge(src, line, dst_file, what):
        rank, part = owner[src]
        drank, dpart = owner[dst_file]
        if dpart == part:
            return
        part_edges.setdefault(part, {}).setdefault(dpart, f"kmod/{src}:{line}: {what}")
        if drank >= rank:
            where = "above" if drank > rank else "beside"
            errors.append(f"kmod/{src}:{line}: {part} (rank {rank}) {what}, which is {dpart}: "
                          f"a layer {where} it (rank {drank})")

    for f in files:
        text = texts[f]
        for line, inc in includes[f]:
            if inc in owner:
                edge(f, line, inc, f'includes "{inc}"')
        # A header's prototypes are checked below (one header per part), not counted as uses.
        seen = {m.group(1) for m in PROTO.finditer(text)} if f.endswith(".h") else set()
        for m in USE.finditer(text):
            name = m.group(1)
            home = defined.get(name)
            if home is None or home == f or name in seen:
                continue
            seen.add(name)
            edge(f, line_of(text, m.start()), home, f"uses {name} ({home})")
        if f.endswith(".h"):
            for m in PROTO.finditer(text):
                name = m.group(1)
                home = defined.get(name)
                if home and owner[home][1] != owner[f][1]:
                    errors.append(f"kmod/{f}:{line_of(text, m.start())}: header of "
                                  f"{owner[f][1]} declares {name}, defined in {home} "
                                  f"({owner[home][1]}): one header per part")

    for comp in find_cycles(part_edges):
        ring = " -> ".join(comp + [comp[0]])
        errors.append(f"cycle between parts: {ring}")
        for a in comp:
            for b in comp:
                if b in part_edges.get(a, {}):
                    errors.append(f"  {a} -> {b}: {part_edges[a][b]}")

    for e in errors:
        print(e)
    if errors:
        print(f"check_layers: {len(errors)} violation(s) in {kmod}")
        return 1
    print(f"check_layers: {len(files)} files in {len(ranks)} parts, no upward or sideways "
          f"include or use, no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
