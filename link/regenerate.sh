#!/bin/sh
# Regenerates link/server-symbols.txt: the functions a `flota servir` session runs, which the
# linker places first and together in the executable (build.rs, `--symbol-ordering-file`).
# Why: the kernel maps an executable's code in 64 KB windows around each page touched, so a
# server whose few thousand functions are spread over 11 MB of code holds most of it resident;
# packed together they fit in ~3 MB (docs/rendimiento.md, session eighteen).
#
# Needs valgrind and python3. Run after changes to the server, the tools or the maps, or a
# new compiler: a function missing from the list still works, it is only placed elsewhere.
# `link/regenerate.sh --check` only reports how many listed functions the release binary has.
set -eu
cd "$(dirname "$0")/.."
list=link/server-symbols.txt
bin=target/release/flota
cargo build --release --bin flota
if [ "${1:-}" = "--check" ]; then
    nm "$bin" | awk '{print $NF}' | sort -u > "${TMPDIR:-/tmp}/flota-syms.$$"
    total=$(grep -vc '^#' "$list")
    found=$(grep -v '^#' "$list" | sort -u | comm -12 - "${TMPDIR:-/tmp}/flota-syms.$$" | wc -l)
    rm -f "${TMPDIR:-/tmp}/flota-syms.$$"
    echo "$found of $total listed functions are in $bin"
    exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" simular --ahora 2026-08-19T15:30 --salida "$work/flota.db" >/dev/null 2>&1
python3 link/session.py "valgrind --tool=callgrind --callgrind-out-file=$work/cg.%p.out --compress-strings=no --demangle=no $(pwd)/$bin" "$work/flota.db" 20
python3 - "$work" "$bin" "$list" <<'PY'
import glob, re, subprocess, sys
work, binary, out = sys.argv[1:]
defined = set()
for line in subprocess.run(["nm", binary], capture_output=True, text=True).stdout.splitlines():
    fields = line.split()
    if len(fields) == 3 and fields[1] in "tTwW":
        defined.add(fields[2])
ran = set()
for profile in glob.glob(f"{work}/cg.*.out"):
    obj = called_obj = None
    for line in open(profile):
        # Callgrind gives each function's object: `ob=` for the functions that follow,
        # `cob=` for the next called function only.
        key, _, value = line.strip().partition("=")
        if key == "ob":
            obj = value
        elif key == "cob":
            called_obj = value
        elif key in ("fn", "cfn"):
            owner = obj if key == "fn" else (called_obj or obj)
            if owner and owner.endswith("/flota"):
                ran.add(re.sub(r"'\d+$", "", value))
            if key == "cfn":
                called_obj = None
listed = sorted(ran & defined)
with open(out, "w") as f:
    f.write("# Functions a `flota servir` session runs (link/regenerate.sh); the linker puts them first.\n")
    f.write("\n".join(listed) + "\n")
print(f"{len(listed)} functions written to {out}")
PY
