"""Interop with the official MCP Python SDK (mcp==2.3.0) against flota's stdio servers.

Run by .ci/run after `cargo test`:  python tests/interop/interop.py TARGET_DIR
where TARGET_DIR holds `flota` and `examples/servidor_texto` (e.g. target/debug).

Checks the low-level ClientSession (legacy handshake, outputSchema validation on every
structured result, progress, ping) and the high-level Client in auto mode (server/discover
probe, then the 2026-07-28 era). Exits non-zero on the first failure.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import anyio
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TARGET = Path(sys.argv[1] if len(sys.argv) > 1 else "target/debug").resolve()
FLOTA = str(TARGET / "flota")
EXAMPLE = str(TARGET / "examples" / "servidor_texto")
# The SDK passes the child only a minimal environment; say what the server needs.
ENV = {"FLOTA_LOG": "warn"}


def check(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(what)
    print(f"  ok  {what}")


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


async def flota_with_client_session() -> None:
    print("ClientSession against flota servir")
    params = StdioServerParameters(command=FLOTA, args=["servir", "--db", "/nonexistent/flota.db"], env=ENV)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check(init.server_info.name == "flota", "serverInfo.name")
            tools = (await session.list_tools()).tools
            check(isinstance(tools, list), f"{len(tools)} tools listed")
            await session.send_ping()
            check(True, "ping")


async def auto_mode(command: str, args: list[str], tool: str | None) -> None:
    print(f"Client(mode='auto') against {Path(command).name}")
    params = StdioServerParameters(command=command, args=args, env=ENV)
    started = time.monotonic()
    async with Client(params) as client:
        elapsed = time.monotonic() - started
        # Answering server/discover is what makes auto mode fast: a silent server costs the
        # client its 10 s probe timeout before it falls back to initialize.
        check(client.protocol_version == "2026-07-28", f"modern era adopted ({client.protocol_version})")
        check(elapsed < 10.0, f"connected in {elapsed * 1000:.0f} ms (no probe timeout)")
        tools = await client.list_tools()
        check(isinstance(tools.tools, list), f"{len(tools.tools)} tools in the modern era")
        if tool:
            res = await client.call_tool(tool, {"texto": "uno dos"})
            check(not res.is_error and res.structured_content["palabras"] == 2, "modern tools/call")
            res = await client.call_tool(tool, {})
            check(res.is_error, "modern validation error is isError")


async def main() -> None:
    await example_with_client_session()
    await flota_with_client_session()
    await auto_mode(EXAMPLE, [], "analizar_texto")
    await auto_mode(FLOTA, ["servir", "--db", "/nonexistent/flota.db"], None)
    print("interop: all checks passed")


if __name__ == "__main__":
    anyio.run(main)
