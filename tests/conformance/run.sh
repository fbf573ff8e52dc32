#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance) against flota's HTTP
# servers. Run by .ci/run:  tests/conformance/run.sh TARGET_DIR SUITE_DIR DB
#   TARGET_DIR  holds `flota` and `examples/servidor_conformidad` (e.g. target/debug)
#   SUITE_DIR   a folder where the suite is installed (`npm install --prefix SUITE_DIR
#               @modelcontextprotocol/conformance@VERSION`), with Node 22 on PATH
#   DB          a database for `flota servir` (the `minimo` scenario)
# 1. Every scenario both revisions require (`--requirements 2025-11-25` and `2026-07-28`),
#    plus the ones they run but do not score (the tasks extension's among them), against the
#    fixtures example: all must pass (expected-failures.yml lists none; the suite fails if a
#    listed one starts passing, so the list stays true).
# 2. The scenarios that need no fixtures, against `flota servir --http --sin-token`.
set -euo pipefail
target=$(cd "$1" && pwd)
suite=$(cd "$2" && pwd)
db=$3
here=$(cd "$(dirname "$0")" && pwd)
conformance="$suite/node_modules/.bin/conformance"
results=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    [ -n "${KEEP_RESULTS:-}" ] || rm -rf "$results"
}
trap cleanup EXIT

# Starts a server whose stderr names its URL, in this shell (so cleanup can stop it); sets
# $url to it.
start() {
    local log
    log="$results/server-${#pids[@]}.log"
    "$@" >/dev/null 2>"$log" &
    pids+=($!)
    # A hang guard (60 s), not a timing: the loop ends as soon as the URL is logged.
    for _ in $(seq 1 1200); do
        url=$(grep -o 'http://[^ ]*/mcp' "$log" | head -1 || true)
        if [ -n "$url" ]; then return; fi
        sleep 0.05
    done
    echo "the server did not start: $(cat "$log")" >&2
    return 1
}

start "$target/examples/servidor_conformidad" --http 127.0.0.1:0
fixtures=$url
for revision in 2025-11-25 2026-07-28; do
    echo "-- conformance --requirements $revision (fixtures: examples/servidor_conformidad)"
    "$conformance" server --url "$fixtures" --requirements "$revision" \
        --expected-failures "$here/expected-failures.yml" -o "$results/fixtures-$revision" \
        | sed -n '/=== SUMMARY ===/,$p'
done

FLOTA_TILES_URL=no start "$target/flota" servir --db "$db" --http 127.0.0.1:0 --sin-token
flota=$url
legacy="server-initialize ping tools-list resources-list prompts-list server-sse-multiple-streams
    server-session-lifecycle dns-rebinding-protection"
modern="tools-list resources-list prompts-list sep-2164-resource-not-found caching
    http-header-validation server-sse-multiple-streams dns-rebinding-protection"
echo "-- conformance, scenarios without fixtures, against flota servir --http"
for pair in $(for s in $legacy; do echo "2025-11-25:$s"; done; for s in $modern; do echo "2026-07-28:$s"; done); do
    revision=${pair%%:*}
    scenario=${pair#*:}
    if ! "$conformance" server --url "$flota" --scenario "$scenario" --spec-version "$revision" \
        -o "$results/flota" >"$results/flota-$scenario.txt" 2>&1; then
        cat "$results/flota-$scenario.txt"
        echo "FAILED: $scenario ($revision) against flota servir --http" >&2
        exit 1
    fi
    checks=$(grep -E '^Passed: ' "$results/flota-$scenario.txt" | tail -1)
    case "$checks" in
        *", 0 failed, 0 warnings") echo "  ok  $scenario ($revision): $checks" ;;
        *) cat "$results/flota-$scenario.txt"
           echo "FAILED: $scenario ($revision) against flota servir --http: $checks" >&2
           exit 1 ;;
    esac
done
