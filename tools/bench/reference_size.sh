#!/usr/bin/env bash
# How much a reader has to read: the size of hpjepa.h's implementation once
# the preprocessor has stripped comments and chosen the build's branches,
# and the call closure of one training step.
#
#   bash tools/bench/reference_size.sh [--list] [HEADER]
#
# HEADER defaults to ./hpjepa.h. For two builds, the reference one
# (-DHPJ_REFERENCE: the fast part compiled out) and the default one, it
# prints a Markdown table with
#   impl lines     non-blank lines of `gcc -E` output that come from HEADER's
#                  implementation (after its `#ifdef HPJEPA_IMPLEMENTATION`);
#                  the linemarkers of `gcc -E` (no -P) tell which lines come
#                  from HEADER and from which of its lines, so system headers
#                  and the API part are left out; a system macro such as
#                  offsetof or NULL can expand to several output lines, so
#                  "(header lines)" also counts the distinct lines of HEADER
#                  they come from, the lines a reader of the file sees;
#   functions      the function definitions among those lines;
#   step closure   the functions a reader meets following hpj__step (the
#                  method's step on a loaded batch; also counted from
#                  hpj__run_step, which first loads the batch: sampling,
#                  the ranks' agreement, buffers, the paths' inputs): start
#                  at hpj__step, add every defined function whose name a
#                  body in the set mentions (a call, or a function passed as
#                  a pointer, e.g. a qsort comparator), until nothing new;
#                  the count and their non-blank lines.
# Targets (issue 54): the reference build's impl lines at most ~7,000 and
# its step closure at most ~1,400 lines.
# --list also prints the closure of the reference build, one function a line
# with its line count. Preprocessing is portable C (no -march: no SIMD
# branches), C99, with OpenMP if the compiler has it; extra preprocessor
# flags go in CPPFLAGS (e.g. CPPFLAGS=-mavx2), OMPFLAG= preprocesses without
# OpenMP. Needs gcc and python3.
set -u
list=0
if [ "${1:-}" = "--list" ]; then list=1; shift; fi
header=${1:-./hpjepa.h}
[ -f "$header" ] || { echo "reference_size: no $header" >&2; exit 1; }
header=$(cd "$(dirname "$header")" && pwd)/$(basename "$header")
CC=${CC:-gcc}
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#define HPJEPA_IMPLEMENTATION\n#include "%s"\n' "$header" > "$tmp/tu.c"
omp=${OMPFLAG-"-fopenmp"}
echo 'int main(void){return 0;}' > "$tmp/t.c"
"$CC" -fopenmp -E "$tmp/t.c" -o /dev/null 2>/dev/null || omp=
for variant in ref fast; do
    def=
    [ $variant = ref ] && def=-DHPJ_REFERENCE
    # shellcheck disable=SC2086
    if ! "$CC" -E -std=c99 $omp $def ${CPPFLAGS:-} "$tmp/tu.c" -o "$tmp/$variant.i" 2> "$tmp/err"; then
        echo "reference_size: $CC -E $def failed:" >&2
        cat "$tmp/err" >&2
        exit 1
    fi
done

"$PY" - "$header" "$tmp/ref.i" "$tmp/fast.i" "$list" <<'EOF'
import re, sys
header, ref_i, fast_i, want_list = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"

# the line of HEADER where the implementation starts
start = None
with open(header, encoding="utf-8", errors="replace") as f:
    for no, line in enumerate(f, 1):
        if re.match(r"\s*#\s*ifdef\s+HPJEPA_IMPLEMENTATION\s*$", line):
            start = no
            break
if start is None:
    sys.exit("reference_size: no '#ifdef HPJEPA_IMPLEMENTATION' in " + header)

marker = re.compile(r'^# (\d+) "((?:[^"\\]|\\.)*)"')

def impl_lines(path):
    """The non-blank output lines that come from HEADER after `start`, each
    with the HEADER line it comes from."""
    out, cur_file, cur_line = [], None, 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = marker.match(line)
            if m:
                cur_line = int(m.group(1))
                cur_file = m.group(2).encode().decode("unicode_escape")
                continue
            if cur_file == header and cur_line > start and line.strip():
                out.append((line.rstrip("\n"), cur_line))
            cur_line += 1
    return out

ident = re.compile(r"[A-Za-z_]\w*")
keywords = {"if", "for", "while", "switch", "return", "sizeof", "do", "else", "case",
            "__attribute__", "__typeof__", "_Pragma", "defined"}

def strip_literals(s):
    """Blanks out string and character literals so braces in them do not count."""
    return re.sub(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'', '""', s)

def functions(lines):
    """Top-level function definitions: name -> (body text, non-blank lines,
    HEADER lines)."""
    defs, depth, pending, body, name = {}, 0, [], [], None
    for raw, src in lines:
        if raw.lstrip().startswith("#"):      # #pragma lines: part of a body
            if depth > 0:
                body.append((raw, src))
            continue
        s = strip_literals(raw)
        if depth == 0:
            pending.append((s, src))
        else:
            body.append((s, src))
        for i, ch in enumerate(s):
            if ch == "{":
                if depth == 0:
                    sig = " ".join(t for t, _ in pending)
                    sig = sig[: len(sig) - (len(s) - i)]  # text before this brace
                    name = None
                    m = re.search(r"([A-Za-z_]\w*)\s*\(([^()]|\([^()]*\))*\)\s*$", sig)
                    if m and m.group(1) not in keywords and not re.search(r"=\s*$", sig):
                        name = m.group(1)
                    body = [] if name is None else list(pending)
                    pending = []
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    if name is not None:
                        defs[name] = ("\n".join(t for t, _ in body), len(body), {n for _, n in body})
                    name, body = None, []
                    pending = [(s[i + 1:], src)] if s[i + 1:].strip() else []
            elif ch == ";" and depth == 0:
                pending = [(s[i + 1:], src)] if s[i + 1:].strip() else []
    return defs

def closure(defs, root):
    seen, todo = [root], [root]
    while todo:
        f = todo.pop(0)
        for w in ident.findall(defs[f][0]):
            if w in defs and w not in seen and w != f:
                seen.append(w)
                todo.append(w)
    return seen

print("## Reading size: the implementation after gcc -E, and the call closure of hpj__step (tools/bench/reference_size.sh)")
print()
print("| build (%s) | impl lines | (header lines) | functions | hpj__step closure: functions | lines | (header lines) |"
      " with the batch loader (hpj__run_step): lines | (header lines) |" % header.split("/")[-1])
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
listing = None
for label, path in (("reference (-DHPJ_REFERENCE)", ref_i), ("default", fast_i)):
    lines = impl_lines(path)
    defs = functions(lines)
    if "hpj__step" in defs:
        cl = closure(defs, "hpj__step")
        nfun, nlin = str(len(cl)), str(sum(defs[f][1] for f in cl))
        nsrc = str(len(set().union(*(defs[f][2] for f in cl))))
    else:
        cl, nfun, nlin, nsrc = [], "-", "-", "-"
    rlin = rsrc = "-"
    if "hpj__run_step" in defs:
        rc = closure(defs, "hpj__run_step")
        rlin, rsrc = str(sum(defs[f][1] for f in rc)), str(len(set().union(*(defs[f][2] for f in rc))))
    print("| %s | %d | %d | %d | %s | %s | %s | %s | %s |"
          % (label, len(lines), len({n for _, n in lines}), len(defs), nfun, nlin, nsrc, rlin, rsrc))
    if listing is None:
        listing = [(f, defs[f][1]) for f in cl]
if want_list and listing:
    print()
    print("hpj__step closure, reference build (function, non-blank lines):")
    for f, n in listing:
        print("  %-40s %5d" % (f, n))
EOF
