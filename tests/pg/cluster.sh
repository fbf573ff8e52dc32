#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: initdb in a fresh temporary folder owned by an
# unprivileged user, the server on loopback only (TCP on a free port and a socket in that
# folder), trust authentication for local connections plus one password role for the tests
# that need a wrong password. Prints `URL=postgres://…` and `DIR=…` on stdout.
#
#   tests/pg/cluster.sh start   # prints the URL and the folder, leaves the server running
#   tests/pg/cluster.sh start durable   # the same with a default install's durability
#                                       # (fsync, synchronous_commit, full_page_writes on):
#                                       # for benchmarks, which must not lean on the tests' shortcuts
#   tests/pg/cluster.sh stop DIR
#   tests/pg/cluster.sh serve   # start, then stop and remove everything when stdin closes
#
# `serve` is what the tests use (tests/it/pg/cluster.rs): they hold its stdin open for as long
# as their process lives, so the cluster goes away with them however they end.
#
# Runs as root (CI) by handing the cluster to the `postgres` account (or `nobody`), and as an
# ordinary user directly. Needs the distribution's server binaries (Debian: postgresql).
set -euo pipefail

bin_dir() {
    if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then
        pg_config --bindir
        return
    fi
    local found
    found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
    if [ -n "$found" ] && [ -x "$found/initdb" ]; then
        echo "$found"
        return
    fi
    echo "no se encontró initdb de PostgreSQL (instale el paquete postgresql)" >&2
    exit 1
}

as_owner() {
    if [ "$(id -u)" = 0 ]; then
        local user=postgres
        id "$user" >/dev/null 2>&1 || user=nobody
        runuser -u "$user" -- "$@"
    else
        "$@"
    fi
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start() {
    local bin dir port durable=${1:-}
    bin=$(bin_dir)
    dir=$(mktemp -d "${TMPDIR:-/tmp}/flota-pg.XXXXXX")
    chmod 755 "$dir"
    if [ "$(id -u)" = 0 ]; then
        local user=postgres
        id "$user" >/dev/null 2>&1 || user=nobody
        chown "$user" "$dir"
    fi
    port=$(free_port)
    as_owner "$bin/initdb" -D "$dir/data" -U flota --auth-local=trust --auth-host=trust \
        --locale=C --encoding=UTF8 >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    # The password role's line first: every other loopback connection is trusted.
    {
        echo "host all flota_clave 127.0.0.1/32 scram-sha-256"
        cat "$dir/data/pg_hba.conf"
    } >"$dir/hba" && as_owner cp "$dir/hba" "$dir/data/pg_hba.conf"
    # In the configuration file rather than on pg_ctl's command line, so that a later
    # `pg_ctl start` (a test restarting the server) listens on the same place.
    cat >"$dir/conf" <<CONF
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
max_connections = 200
CONF
    # The tests' throwaway data needs no durability; a benchmark asks for the defaults.
    if [ "$durable" != durable ]; then
        printf 'fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n' >>"$dir/conf"
    fi
    as_owner sh -c "cat '$dir/conf' >>'$dir/data/postgresql.conf'"
    # -t: a hang guard (the server is ready in about a second here), not a timing.
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 300 start >/dev/null \
        || { cat "$dir/server.log" >&2; exit 1; }
    as_owner "$bin/psql" -h "$dir" -p "$port" -U flota -d postgres -qAt \
        -c "CREATE ROLE flota_clave LOGIN PASSWORD 'secreta' CREATEDB" >/dev/null
    echo "URL=postgres://flota@127.0.0.1:$port/postgres"
    echo "DIR=$dir"
    echo "BIN=$bin"
}

stop() {
    local dir=$1 bin
    bin=$(bin_dir)
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}

serve() {
    local out
    out=$(start)
    SERVE_DIR=$(echo "$out" | sed -n "s/^DIR=//p")
    trap 'stop "$SERVE_DIR"' EXIT
    echo "$out"
    # Until the test process closes our stdin (it exits, or dies).
    cat >/dev/null || true
}

case "${1:-}" in
    start) start "${2:-}" ;;
    serve) serve ;;
    stop) stop "${2:?falta la carpeta}" ;;
    *) echo "uso: $0 start [durable] | stop DIR" >&2; exit 2 ;;
esac
