// Interop with the official TypeScript SDK (@modelcontextprotocol/sdk) over Streamable HTTP.
//
// Run by .ci/run with Node 22 and the SDK installed in a temporary folder:
//   NODE_PATH=<folder>/node_modules node tests/interop/interop_http.mjs TARGET_DIR DB
// Starts `flota servir --db DB --http 127.0.0.1:0 --token …`, then with the token: connects,
// lists and calls every tool (the SDK validates each structuredContent against its
// outputSchema), lists and reads a resource, gets a prompt, completes a plate; without the
// token: refused. Exits non-zero on the first failure.

import { spawn } from "node:child_process";
import path from "node:path";

// The SDK lives in a temporary folder (nothing global): NODE_PATH names its node_modules.
const sdk = path.join(process.env.NODE_PATH ?? "node_modules", "@modelcontextprotocol/sdk");
const { Client } = await import(path.join(sdk, "dist/esm/client/index.js"));
const { StreamableHTTPClientTransport } = await import(
  path.join(sdk, "dist/esm/client/streamableHttp.js")
);

const [target, db] = process.argv.slice(2);
const flota = path.resolve(target ?? "target/debug", "flota");
const token = "ts-interop-secreto";

function check(condition, what) {
  if (!condition) {
    throw new Error(`FAILED: ${what}`);
  }
  console.log(`  ok  ${what}`);
}

function start() {
  const child = spawn(flota, ["servir", "--db", db, "--http", "127.0.0.1:0", "--token", token], {
    env: { ...process.env, FLOTA_TILES_URL: "no", FLOTA_LOG: "info" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  return new Promise((resolve, reject) => {
    let buffered = "";
    // A hang guard only: the address is printed within milliseconds.
    const timer = setTimeout(() => reject(new Error("no address on stderr")), 120000);
    child.stderr.on("data", (chunk) => {
      buffered += chunk.toString();
      const match = buffered.match(/(http:\/\/\S+\/mcp)\s*$/m);
      if (match) {
        clearTimeout(timer);
        resolve({ child, url: match[1] });
      }
    });
  });
}

const calls = {
  posicion_actual: { placa: "p 123 bcd" },
  unidades_detenidas: { minutos_minimos: 0 },
  resumen_recorrido: { placa: "P-456DEF", fecha: "ayer" },
  mapa_recorrido: { placa: "P-456DEF", fecha: "ayer" },
  mapa_flota: {},
  alertas: { fecha_inicio: "anteayer", fecha_fin: "hoy" },
  verificar_geocerca: { placa: "P-123BCD", nombre_geocerca: "CEDIS Zona 12", fecha: "ayer" },
  reporte_kilometraje: { fecha_inicio: "anteayer", fecha_fin: "hoy" },
};

const { child, url } = await start();
try {
  console.log("TypeScript SDK StreamableHTTPClientTransport against flota servir --http");
  const client = new Client({ name: "interop-ts", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  check(client.getServerVersion()?.name === "flota", "serverInfo.name");
  const { tools } = await client.listTools();
  check(tools.length === 8, `${tools.length} tools listed`);
  for (const [name, args] of Object.entries(calls)) {
    const result = await client.callTool({ name, arguments: args });
    check(!result.isError && result.structuredContent, `${name}: structured result conforms`);
  }
  const { resources } = await client.listResources();
  check(resources.some((r) => r.uri === "flota://geocercas"), "resources listed");
  const read = await client.readResource({ uri: "flota://geocercas" });
  check(JSON.parse(read.contents[0].text).type === "FeatureCollection", "flota://geocercas is GeoJSON");
  const { resourceTemplates } = await client.listResourceTemplates();
  check(resourceTemplates[0]?.uriTemplate === "flota://rutas/{nombre}", "route template listed");
  const prompt = await client.getPrompt({ name: "revision_alertas", arguments: { fecha_inicio: "anteayer", fecha_fin: "hoy" } });
  check(prompt.messages[0].content.text.includes("alertas"), "revision_alertas prompt");
  const completion = await client.complete({
    ref: { type: "ref/prompt", name: "estado_unidad" },
    argument: { name: "placa", value: "p4" },
  });
  check(completion.completion.values[0] === "P-456DEF", "placa completes");
  await transport.terminateSession();
  await client.close();

  const refused = new Client({ name: "interop-ts", version: "1.0.0" });
  let error = null;
  try {
    await refused.connect(new StreamableHTTPClientTransport(new URL(url)));
  } catch (e) {
    error = e;
  }
  check(error !== null, `refused without the token (${String(error).slice(0, 60)})`);
  console.log("interop (TypeScript, HTTP): all checks passed");
} finally {
  child.kill("SIGTERM");
}
