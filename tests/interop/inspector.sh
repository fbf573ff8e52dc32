#!/usr/bin/env bash
# The MCP Inspector's CLI (a host without the MCP Apps extension) against `flota servir` over
# stdio: both map tools answer it with a text block and a PNG, and without the view's data
# (`vista`), which only a client that negotiated the extension gets (issue 18).
# Usage: tests/interop/inspector.sh BIN_DIR NODE_MODULES DB
set -euo pipefail
bin="$1/flota"
inspector="$2/.bin/mcp-inspector"
db="$3"

check() {
    local tool="$1"
    shift
    timeout 600 "$inspector" --cli "$bin" servir --db "$db" \
        --method tools/call --tool-name "$tool" "$@" 2>/dev/null |
        python3 -c '
import json, sys
tool = sys.argv[1]
r = json.load(sys.stdin)
kinds = [c["type"] for c in r["content"]]
assert not r.get("isError"), f"{tool}: isError {r}"
assert kinds == ["text", "image"], f"{tool}: content {kinds}"
mime = r["content"][1]["mimeType"]
assert mime == "image/png", f"{tool}: {mime}"
assert "vista" not in (r.get("structuredContent") or {}), f"{tool}: vista sent to a host without Apps"
print(f"  ok  {tool}: text + PNG, no vista")
' "$tool"
}

check mapa_recorrido --tool-arg placa=P-123BCD --tool-arg fecha=hoy
check mapa_flota
echo "interop (Inspector CLI, stdio): all checks passed"
