#!/usr/bin/env bash
# The browser test of the MCP Apps map views (vistas.test.mjs). Installs what it needs and
# nothing globally but Debian's chromium: the pinned npm packages from the lockfile, and in CI
# (CI=true, or FLOTA_NODE22=1) Node 22 from the npm `node` package in a temporary folder;
# elsewhere the machine's Node (20 or later). Builds `flota`, then
# runs the test under a time bound. FLOTA_CAPTURAS=docs/img refreshes the screenshots.
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd ../.. && pwd)

if [ ! -x /usr/bin/chromium ]; then
  echo "instalando chromium (Debian)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

node_bin=node
if [ "${CI:-}" = true ] || [ -n "${FLOTA_NODE22:-}" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  timeout 900 npm install --prefix "$tmp" --no-audit --no-fund --silent node@22
  node_bin="$tmp/node_modules/.bin/node"
fi
echo "node $("$node_bin" --version), $(/usr/bin/chromium --version 2>/dev/null | head -1)"

timeout 900 npm ci --no-audit --no-fund --silent
(cd "$root" && cargo build --quiet --bin flota)
if [ -n "${FLOTA_CAPTURAS:-}" ]; then
  case "$FLOTA_CAPTURAS" in /*) ;; *) export FLOTA_CAPTURAS="$root/$FLOTA_CAPTURAS" ;; esac
fi
# A hang guard: the file takes about 35 s here; a machine ten times slower stays well within.
timeout 1800 "$node_bin" --test --test-reporter=spec vistas.test.mjs
