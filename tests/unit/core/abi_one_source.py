#!/usr/bin/env python3
"""One ABI source (docs/nvidia-rm-abi.md, "Adding a driver branch"): no host spells an RM number.

The filter core (kmod/core) holds the NVIDIA RM ABI: numbers in kmod/core/abi/*.h, sizes and
offsets from the structs there, one driver branch per table (kmod/core/tables_580.c). Its hosts
(the kernel host kmod/*.c and kmod/*.h, the shim shim/, the manager daemon/, topology/) take every
number from those headers and every decision from the core's API. This check fails when a host
file spells one of them as a literal:

  escape     a hex literal equal to an NV_ESC_* number (kmod/core/abi/nv_escape.h)
  request    a hex literal that is an encoded escape request, _IOWR('F', nr, size)
  control    a hex literal equal to an RM control number (kmod/core/abi/ctrl.h)
  class      a hex literal equal to an RM class number (kmod/core/abi/classes.h), 0x30 and up
  status     a hex literal equal to an RM status code (kmod/core/abi/nvstatus.h) but NV_OK and
             NV_ERR_GENERIC (0xffff is too common a mask to tell)
  size       in kmod/ and shim/, a decimal compared with a size or length that equals the size
             of a driver struct (tests/data/abi/rm-580.txt, 12 bytes and up)

The numbers are read from the core's headers and the layout golden file, so the list follows the
tables. Comments count: a host names the driver's symbol, not its number.

Usage: abi_one_source.py REPO_ROOT   (exit 0: clean, 1: findings listed, 2: cannot run)
"""
import os
import re
import subprocess
import sys

HEX = re.compile(r"\b0[xX]([0-9a-fA-F]+)(?:[uU]?[lL]{0,2}|[lL]{1,2}[uU]?)\b")
DEFINE_HEX = re.compile(r"^#define\s+(\w+)\s+(?:\(?\s*)0[xX]([0-9a-fA-F]+)[uU]?\b", re.M)
DEFINE_BASE = re.compile(r"^#define\s+(\w+)\s+\(\s*NV_IOCTL_BASE\s*\+\s*(\d+)\s*\)", re.M)
SIZE_CMP = re.compile(
    r"(?:\b\w*(?:size|Size|len|Len|SIZE)\w*(?:\([^()]*\))?\s*(?:==|!=)\s*(\d+)\b)"
    r"|(?:\b(\d+)\s*(?:==|!=)\s*\w*(?:size|Size|len|Len|SIZE)\w*)")
SOURCE_EXT = (".c", ".h", ".cc", ".hh", ".cpp", ".hpp")


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def core_numbers(root):
    """{kind: {value: name}} from the core's ABI headers."""
    abi = os.path.join(root, "kmod", "core", "abi")
    out = {"escape": {}, "control": {}, "class": {}, "status": {}}
    esc = read(os.path.join(abi, "nv_escape.h"))
    base = 200
    m = re.search(r"^#define\s+NV_IOCTL_BASE\s+(\d+)", esc, re.M)
    if m:
        base = int(m.group(1))
    for name, val in DEFINE_HEX.findall(esc):
        if name.startswith("NV_ESC_"):
            out["escape"][int(val, 16)] = name
    for name, n in DEFINE_BASE.findall(esc):
        out["escape"][base + int(n)] = name
    for name, val in DEFINE_HEX.findall(read(os.path.join(abi, "ctrl.h"))):
        v = int(val, 16)
        if "_CTRL_" in name and ("_CMD_" in name or name.endswith("_ENGINEID")) and v > 0xFF:
            out["control"][v] = name
    for name, val in DEFINE_HEX.findall(read(os.path.join(abi, "classes.h"))):
        v = int(val, 16)
        if v >= 0x30 and "_PARAMS" not in name and "_SIZE" not in name:
            out["class"].setdefault(v, name)
    for name, val in DEFINE_HEX.findall(read(os.path.join(abi, "nvstatus.h"))):
        v = int(val, 16)
        if name.startswith("NV_ERR_") and v not in (0, 0xFFFF):
            out["status"][v] = name
    return out


def struct_sizes(root):
    sizes = {}
    for line in read(os.path.join(root, "tests", "data", "abi", "rm-580.txt")).splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "size" and int(parts[2]) >= 12:
            sizes.setdefault(int(parts[2]), parts[1])
    return sizes


def in_host(rel):
    parts = rel.split("/")
    if not rel.endswith(SOURCE_EXT):
        return False
    if parts[0] == "kmod":
        return len(parts) == 2
    return parts[0] in ("shim", "daemon", "topology")


def host_files(root):
    """The core's hosts: kmod/ outside kmod/core, shim/, daemon/, topology/. In a git checkout,
    the files git tracks or would track (a module build leaves generated C in kmod/)."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard"],
                             check=True, capture_output=True, text=True).stdout
        rels = sorted(set(out.split("\n")) - {""})
    except (OSError, subprocess.CalledProcessError):
        rels = []
        for top in ("kmod", "shim", "daemon", "topology"):
            for dirpath, _, filenames in os.walk(os.path.join(root, top)):
                rels += [os.path.relpath(os.path.join(dirpath, f), root) for f in filenames]
        rels.sort()
    for rel in rels:
        if in_host(rel) and os.path.isfile(os.path.join(root, rel)):
            yield os.path.join(root, rel)


def is_request(v):
    # _IOC(dir, 'F', nr, size): dir in bits 30-31, type 'F' (0x46) in bits 8-15.
    return v >= 0x40000000 and v <= 0xFFFFFFFF and (v >> 8) & 0xFF == 0x46


def findings(root):
    nums = core_numbers(root)
    sizes = struct_sizes(root)
    for path in host_files(root):
        rel = os.path.relpath(path, root)
        for lineno, line in enumerate(read(path).splitlines(), 1):
            for m in HEX.finditer(line):
                v = int(m.group(1), 16)
                lit = m.group(0)
                if is_request(v):
                    yield rel, lineno, lit, "request", "_IOWR('F', 0x%x, %d)" % (v & 0xFF,
                                                                                (v >> 16) & 0x3FFF)
                    continue
                kinds = [k for k in ("escape", "control", "class", "status") if v in nums[k]]
                if kinds:
                    yield rel, lineno, lit, "/".join(kinds), " or ".join(nums[k][v] for k in kinds)
            if not rel.startswith(("kmod", "shim")):
                continue  # sizes: only the RM hosts (topology compares string lengths)
            for m in SIZE_CMP.finditer(line):
                n = int(m.group(1) or m.group(2))
                if n in sizes:
                    yield rel, lineno, str(n), "size", "sizeof(%s)" % sizes[n]


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    root = sys.argv[1]
    try:
        found = list(findings(root))
    except OSError as e:
        print("abi_one_source: %s" % e, file=sys.stderr)
        return 2
    for rel, lineno, lit, kind, name in found:
        print("%s:%d: %s %s spelled in a host: use %s from kmod/core" % (rel, lineno, kind, lit,
                                                                        name))
    if found:
        files = len({f[0] for f in found})
        print("abi_one_source: %d ABI literal(s) in %d host file(s); the core's headers and API "
              "hold them (docs/nvidia-rm-abi.md, \"Adding a driver branch\")" % (len(found), files))
        return 1
    print("abi_one_source: no RM escape, request, control, class, status or struct size "
          "spelled in a host file")
    return 0


if __name__ == "__main__":
    sys.exit(main())
