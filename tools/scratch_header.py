"""Shared by tools/paired_step.py, tools/step_phases.py and
tools/gemm_shapes.py, which write a patched scratch copy of ./hpjepa.h for
timing experiments: the command line (one OUTDIR), reading the header,
writing OUTDIR/hpjepa.h, and one-line errors (exit 1). Standard library
only."""
import os
import sys


def fail(prog, msg):
    sys.stderr.write("%s: %s\n" % (prog, msg))
    sys.exit(1)


def read(prog):
    """(OUTDIR, the text of ./hpjepa.h) from the command line of tools/PROG.py."""
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        fail(prog, "usage: python3 tools/%s.py OUTDIR" % prog)
    try:
        with open("hpjepa.h") as f:
            return sys.argv[1], f.read()
    except OSError as e:
        fail(prog, "hpjepa.h: %s (run from the repository root)" % e.strerror)


def write(out, src):
    """Writes OUTDIR/hpjepa.h; returns its path."""
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "hpjepa.h")
    with open(path, "w") as f:
        f.write(src)
    return path


def insert_before(prog, body, where, marks):
    """body with each (text, insert) of marks applied: insert goes right
    before text, which must occur once in body (checked for every text
    first; otherwise a one-line error naming `where`, the function whose
    body it is, and exit 1)."""
    for text, _ in marks:
        if body.count(text) != 1:
            fail(prog, "hpjepa.h: %r not found once in %s; update this script" % (text.strip().split("\n")[0], where))
    for text, insert in marks:
        body = body.replace(text, insert + text, 1)
    return body
