"""Interop with the official MCP Python SDK (mcp==2.3.0) against flota's stdio servers.

Run by .ci/run after `cargo test`:  python tests/interop/interop.py TARGET_DIR
where TARGET_DIR holds `flota` and `examples/servidor_texto` (e.g. target/debug).

Checks the low-level ClientSession (legacy handshake, outputSchema validation on every
structured result, progress, ping; all eight flota tools on a freshly simulated `minimo`
scenario, including both maps' PNG image blocks and, for a client without the MCP Apps
extension, no view data in the answers while the views stay readable as resources), the high-level Client in auto mode (server/discover
probe, then the 2026-07-28 era), and the Streamable HTTP client against `flota servir --http`
(with the token: every tool, a resource, a prompt, a completion; without it: refused). Exits
non-zero on the first failure.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

TARGET = Path(sys.argv[1] if len(sys.argv) > 1 else "target/debug").resolve()
FLOTA = str(TARGET / "flota")
EXAMPLE = str(TARGET / "examples" / "servidor_texto")
# The SDK passes the child only a minimal environment; say what the server needs.
ENV = {"FLOTA_LOG": "warn"}


def check(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(what)
    print(f"  ok  {what}")


TOOL_CALLS = {
    "posicion_actual": {"placa": "p 123 bcd"},
    "unidades_detenidas": {"minutos_minimos": 0},
    "resumen_recorrido": {"placa": "P-456DEF", "fecha": "ayer"},
    "mapa_recorrido": {"placa": "P-456DEF", "fecha": "ayer"},
    "mapa_flota": {},
    "alertas": {"fecha_inicio": "anteayer", "fecha_fin": "hoy"},
    "verificar_geocerca": {"placa": "P-123BCD", "nombre_geocerca": "CEDIS Zona 12", "fecha": "ayer"},
    "reporte_kilometraje": {"fecha_inicio": "anteayer", "fecha_fin": "hoy"},
}


async def example_with_client_session() -> None:
    print("ClientSession (legacy handshake) against servidor_texto")
    params = StdioServerParameters(command=EXAMPLE, args=[], env=ENV)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check(init.protocol_version == "2025-11-25", f"version {init.protocol_version}")
            check(init.server_info.name == "servidor-texto", "serverInfo.name")
            check(bool(init.instructions), "instructions present")

            tools = (await session.list_tools()).tools
            names = [t.name for t in tools]
            check(names == ["analizar_texto", "calcular_estadisticas", "informacion_sistema", "esperar"], f"tools {names}")
            check(all(t.output_schema and t.input_schema.get("type") == "object" for t in tools), "schemas on every tool")
            check(all(t.annotations and t.annotations.read_only_hint for t in tools), "readOnlyHint")

            # The SDK validates structuredContent against outputSchema on every call below.
            res = await session.call_tool("analizar_texto", {"texto": "Hola Mundo\nÁrbol"})
            check(not res.is_error and res.structured_content["palabras"] == 3, "analizar_texto")
            check(res.content[0].type == "text" and json.loads(res.content[0].text) == res.structured_content, "text block mirrors JSON")

            res = await session.call_tool("calcular_estadisticas", {"numeros": [4, 8, 15, 16, 23, 42]})
            check(res.structured_content == {"cantidad": 6, "suma": 108.0, "media": 18.0, "minimo": 4.0, "maximo": 42.0}, "calcular_estadisticas")

            res = await session.call_tool("informacion_sistema", {})
            check(res.structured_content["entorno"].startswith("rustc"), "informacion_sistema")

            res = await session.call_tool("calcular_estadisticas", {"numeros": []})
            check(res.is_error and "no puede ser una lista vacía" in res.content[0].text, "validation error is an isError result")

            seen: list[float] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                seen.append(progress)

            res = await session.call_tool("esperar", {"milisegundos": 300}, progress_callback=on_progress)
            check(not res.is_error, "esperar")
            check(len(seen) > 0 and seen == sorted(seen), f"progress increasing ({len(seen)} notifications)")

            await session.send_ping()
            check(True, "ping")


async def flota_with_client_session(db: str) -> None:
    print("ClientSession against flota servir (the minimo scenario)")
    env = dict(ENV, FLOTA_TILES_URL="no")
    params = StdioServerParameters(command=FLOTA, args=["servir", "--db", db], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check(init.server_info.name == "flota", "serverInfo.name")
            tools = (await session.list_tools()).tools
            check(len(tools) == 8, f"{len(tools)} tools listed")
            await session.send_ping()
            check(True, "ping")
            # Every tool once: the SDK validates each structuredContent against the tool's
            # outputSchema and raises if it does not conform.
            calls = TOOL_CALLS
            for name, arguments in calls.items():
                res = await session.call_tool(name, arguments)
                check(not res.is_error and res.structured_content is not None, f"{name}: structured result conforms")
            # A host without the MCP Apps extension: text + PNG, as before the views existed.
            for name, view in [("mapa_recorrido", "ui://flota/recorrido"), ("mapa_flota", "ui://flota/flota")]:
                res = await session.call_tool(name, calls[name])
                check([c.type for c in res.content] == ["text", "image"], f"{name}: a text block and an image block")
                check(json.loads(res.content[0].text) == res.structured_content, f"{name}: the text mirrors the structured result")
                check("vista" not in res.structured_content, f"{name}: no view data for a client without the extension")
                images = [c for c in res.content if c.type == "image"]
                check(images[0].mime_type == "image/png", f"{name}: image/png")
                png = base64.b64decode(images[0].data)
                check(png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) <= 300 * 1024, f"{name}: PNG decodes ({len(png) // 1024} KB)")
                tool = next(t for t in tools if t.name == name)
                check((tool.meta or {}).get("ui", {}).get("resourceUri") == view, f"{name}: _meta.ui.resourceUri {view}")
                html = (await session.read_resource(view)).contents[0]
                check(html.mime_type == "text/html;profile=mcp-app", f"{view}: MIME {html.mime_type}")
                check(len(html.text.encode()) < 400 * 1024, f"{view}: {len(html.text.encode()) // 1024} KB, under 400 KB")
            res = await session.call_tool("posicion_actual", {"placa": "P-000XXX"})
            check(res.is_error, "unknown plate is an isError result")


async def auto_mode(command: str, args: list[str], tool: str | None) -> None:
    print(f"Client(mode='auto') against {Path(command).name}")
    params = StdioServerParameters(command=command, args=args, env=ENV)
    # A hang guard, not a timing claim: the whole exchange takes milliseconds. Whether the
    # server answered the server/discover probe is read from the era, not from the clock: a
    # server that ignores or refuses the probe is reached through `initialize`, a
    # handshake-era version (a probe answered too late for a loaded machine still ends
    # modern, through the SDK's re-probe, and is no failure of the server's).
    with anyio.fail_after(120):
        async with Client(params) as client:
            session = client.session
            check(client.protocol_version == "2026-07-28", f"modern era adopted ({client.protocol_version})")
            check(session.discover_result is not None and session.initialize_result is None, "server/discover answered, no initialize")
            tools = await client.list_tools()
            check(isinstance(tools.tools, list), f"{len(tools.tools)} tools in the modern era")
            if tool:
                res = await client.call_tool(tool, {"texto": "uno dos"})
                check(not res.is_error and res.structured_content["palabras"] == 2, "modern tools/call")
                res = await client.call_tool(tool, {})
                check(res.is_error, "modern validation error is isError")


def simulate_minimo(folder: str) -> str:
    db = str(Path(folder) / "flota.db")
    scenario = Path(__file__).resolve().parents[2] / "escenarios" / "minimo.toml"
    subprocess.run(
        [FLOTA, "simular", str(scenario), "--ahora", "2026-08-19T15:30", "--salida", db],
        check=True,
        stderr=subprocess.DEVNULL,
    )
    return db




def start_http(db: str, token: str) -> tuple[subprocess.Popen, str]:
    """`flota servir --http` on a free loopback port; returns the process and its URL."""
    env = dict(ENV, FLOTA_TILES_URL="no", FLOTA_LOG="info")
    process = subprocess.Popen(
        [FLOTA, "servir", "--db", db, "--http", "127.0.0.1:0", "--token", token],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    deadline = time.monotonic() + 120  # a hang guard: the address comes within milliseconds
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if "http://" in line and line.rstrip().endswith("/mcp"):
            # Keep reading its log, or a full pipe would block the server.
            threading.Thread(target=lambda: process.stderr.read(), daemon=True).start()
            return process, line[line.index("http://"):].strip()
    process.kill()
    raise AssertionError("flota servir --http did not say where it listens")


async def flota_over_http(db: str) -> None:
    print("ClientSession over Streamable HTTP against flota servir --http")
    token = "interop-secreto"
    process, url = start_http(db, token)
    try:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                check(init.server_info.name == "flota", "serverInfo.name over HTTP")
                tools = (await session.list_tools()).tools
                check(len(tools) == 8, f"{len(tools)} tools listed over HTTP")
                for name, arguments in TOOL_CALLS.items():
                    res = await session.call_tool(name, arguments)
                    check(not res.is_error and res.structured_content is not None, f"{name} over HTTP")
                resources = (await session.list_resources()).resources
                expected = ["flota://unidades", "flota://geocercas", "flota://datos", "ui://flota/recorrido", "ui://flota/flota"]
                check([str(r.uri) for r in resources] == expected, "resources listed")
                read_back = await session.read_resource("flota://unidades")
                roster = json.loads(read_back.contents[0].text)
                check(roster["total"] == 3, "flota://unidades read")
                prompt = await session.get_prompt("informe_diario", {"fecha": "ayer"})
                check(len(prompt.messages) >= 1 and "reporte_kilometraje" in prompt.messages[0].content.text, "informe_diario prompt")
        # Without the token the server answers 401 and the client cannot even initialize.
        refused = False
        try:
            async with streamable_http_client(url) as (read, write):
                async with ClientSession(read, write) as session:
                    with anyio.fail_after(10):
                        await session.initialize()
        except BaseException:  # the SDK raises inside a task group (an ExceptionGroup)
            refused = True
        check(refused, "refused without the token")
    finally:
        process.terminate()
        process.wait(timeout=120)


async def main() -> None:
    await example_with_client_session()
    with tempfile.TemporaryDirectory() as folder:
        db = simulate_minimo(folder)
        await flota_with_client_session(db)
        await flota_over_http(db)
    await auto_mode(EXAMPLE, [], "analizar_texto")
    await auto_mode(FLOTA, ["servir", "--db", "/nonexistent/flota.db"], None)
    print("interop: all checks passed")


if __name__ == "__main__":
    anyio.run(main)
