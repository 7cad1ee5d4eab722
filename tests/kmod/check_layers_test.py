#!/usr/bin/env python3
"""The layer check (check_layers.py) fails on each kind of violation it is for: kmod/'s host files
are copied to a scratch folder, one violation is made in the copy, and the check must fail naming
it (and pass on the untouched copy)."""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.realpath(__file__))
CHECK = os.path.join(HERE, "check_layers.py")


def run(kmod):
    p = subprocess.run([sys.executable, CHECK, kmod], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def main():
    src = sys.argv[1]
    failures = []
    cases = [
        ("clean copy", None, 0, "no upward or sideways include or use, no cycle"),
        ("upward include", ("slot.c", '#include "control.h"\n'), 1,
         'slot (rank 3) includes "control.h", which is control: a layer above it'),
        ("sideways call", ("ioctl.c", "void f(void) { vgpu_compute_exit(); }\n"), 1,
         "data-path (rank 4) uses vgpu_compute_exit (compute_config.c), which is compute: "
         "a layer beside it"),
        ("cycle", ("slot.c", "const void *p = &vgpu_fops;\n"), 1,
         "cycle between parts: data-path -> slot -> data-path"),
        ("shared header", ("slot.h", "void vgpu_genl_exit(void);\n"), 1,
         "header of slot declares vgpu_genl_exit, defined in genl.c (control)"),
        ("unplaced file", ("unplaced.c", "int x;\n"), 1, "kmod/unplaced.c:1: in no part"),
    ]
    for name, edit, want_rc, want_text in cases:
        with tempfile.TemporaryDirectory() as tmp:
            kmod = os.path.join(tmp, "kmod")
            os.mkdir(kmod)
            for f in os.listdir(src):
                if f.endswith((".c", ".h")) or f == "layers.txt":
                    shutil.copy(os.path.join(src, f), kmod)
            if edit:
                with open(os.path.join(kmod, edit[0]), "a") as fh:
                    fh.write(edit[1])
            rc, out = run(kmod)
            ok = rc == want_rc and want_text in out
            print(f"{'ok  ' if ok else 'FAIL'} {name}: rc {rc}")
            if not ok:
                failures.append(name)
                print(f"  wanted rc {want_rc} and: {want_text}\n  got:\n{out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
