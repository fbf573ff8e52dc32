// The MCP Apps map views (ui/) in headless Chromium, fed with real answers.
//
// A scenario is simulated with the real `flota simular`; `flota servir` answers over stdio as
// to a host that renders MCP Apps (the client declares the extension): the views' documents
// come from resources/read of ui://flota/recorrido and ui://flota/flota, their data from real
// mapa_recorrido and mapa_flota results. A small host harness (anfitrion.html/js, served on
// loopback) embeds each view in a sandboxed frame under the extension's default CSP and speaks
// the host side of the protocol.
//
// Checks: the track's colours at the projected reports, one marker per stop, speeding episode
// and signal loss that the real result counts, the slider and play button move the replay
// marker, a click opens the evidence with every field, the height follows the host, day
// navigation through tools/call, no console error, no request outside the harness.
//
// Environment: FLOTA_BIN (default target/debug/flota), CHROMIUM (/usr/bin/chromium),
// FLOTA_CAPTURAS (a folder: write the screenshots there, e.g. docs/img).

import { test, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { createInterface } from "node:readline";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { chromium } from "playwright-core";
import { PNG } from "pngjs";

const AQUI = path.dirname(fileURLToPath(import.meta.url));
const RAIZ = path.resolve(AQUI, "..", "..");
const FLOTA = process.env.FLOTA_BIN || path.join(RAIZ, "target", "debug", "flota");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const CAPTURAS = process.env.FLOTA_CAPTURAS ? path.resolve(process.env.FLOTA_CAPTURAS) : null;
const AHORA = "2026-08-19T15:30";
const ENTORNO = { ...process.env, FLOTA_TILES_URL: "no" };
// Offline addresses only: no online geocoder is ever asked.
delete ENTORNO.GOOGLE_MAPS_API_KEY;
delete ENTORNO.FLOTA_GEOCODER_URL;
// Generous bounds, reached only when something is broken (never a performance claim): each
// wait ends on its event, in a second or two here; a CI machine several times slower must
// stay far from them.
const ESPERA_MS = 60000;
const PLAZO_PRUEBA = { timeout: 600000 };

let tmp;
let db;
let servidor;
let servidorSinApps;
let servidorDeposito;
let web;
let base;
let contexto;
let pagina;
let unidades;
const problemas = { consola: [], red: [] };

// --- The real server over stdio --------------------------------------------------------------

const MIME_VISTA = "text/html;profile=mcp-app";
const CON_APPS = { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: [MIME_VISTA] } } };

class ServidorMcp {
  constructor(bd, capacidades, extra = []) {
    this.capacidades = capacidades;
    this.proceso = spawn(FLOTA, ["servir", "--db", bd, ...extra], { env: ENTORNO, stdio: ["pipe", "pipe", "ignore"] });
    this.siguiente = 1;
    this.pendientes = new Map();
    createInterface({ input: this.proceso.stdout }).on("line", (linea) => {
      const m = JSON.parse(linea);
      const p = this.pendientes.get(m.id);
      if (p) {
        this.pendientes.delete(m.id);
        if (m.error) p.rechazar(new Error(JSON.stringify(m.error)));
        else p.resolver(m.result);
      }
    });
  }

  pedir(method, params) {
    const id = this.siguiente++;
    return new Promise((resolver, rechazar) => {
      this.pendientes.set(id, { resolver, rechazar });
      this.proceso.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    });
  }

  async iniciar() {
    await this.pedir("initialize", {
      protocolVersion: "2025-06-18",
      capabilities: this.capacidades,
      clientInfo: { name: "prueba-vistas", version: "1" },
    });
    this.proceso.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
  }

  llamar(name, args) {
    return this.pedir("tools/call", { name, arguments: args });
  }

  cerrar() {
    this.proceso.stdin.end();
  }
}

async function estructurado(nombre, args) {
  const r = await servidor.llamar(nombre, args);
  assert.ok(!r.isError, `${nombre} ${JSON.stringify(args)}: ${JSON.stringify(r.content)}`);
  return r.structuredContent;
}

/** The real mapa_recorrido result, `vista` included (the client declared the extension). */
function resultadoRecorrido(placa, fecha) {
  return servidor.llamar("mapa_recorrido", { placa, fecha });
}

/** A view's document as the host reads it: resources/read of its ui:// URI. */
async function documento(uri) {
  const r = await servidor.pedir("resources/read", { uri });
  const c = r.contents[0];
  assert.equal(c.mimeType, MIME_VISTA, uri);
  assert.ok(Buffer.byteLength(c.text) < 400 * 1024, `${uri}: ${Buffer.byteLength(c.text)} bytes`);
  assert.deepEqual(c._meta, { ui: { prefersBorder: true } }, uri);
  return c.text;
}

// --- Harness, browser ------------------------------------------------------------------------

function servirArchivos() {
  const archivos = {
    "/anfitrion.html": [path.join(AQUI, "anfitrion.html"), "text/html; charset=utf-8"],
    "/anfitrion.js": [path.join(AQUI, "anfitrion.js"), "text/javascript; charset=utf-8"],
    "/vistas/recorrido.html": [path.join(tmp, "recorrido.html"), "text/html; charset=utf-8"],
    "/vistas/flota.html": [path.join(tmp, "flota.html"), "text/html; charset=utf-8"],
  };
  return new Promise((resolver) => {
    const s = http.createServer((req, res) => {
      const archivo = archivos[req.url];
      if (!archivo) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { "content-type": archivo[1], "cache-control": "no-store" });
      res.end(fs.readFileSync(archivo[0]));
    });
    s.listen(0, "127.0.0.1", () => resolver(s));
  });
}

const CONTEXTO_ANFITRION = {
  theme: "light",
  displayMode: "inline",
  availableDisplayModes: ["inline"],
  containerDimensions: { width: 860, maxHeight: 500 },
  locale: "es-GT",
  timeZone: "America/Guatemala",
  platform: "web",
};

function conPlazo(promesa, que) {
  let reloj;
  const plazo = new Promise((_, rechazar) => {
    reloj = setTimeout(() => rechazar(new Error(`${que} en ${ESPERA_MS} ms`)), ESPERA_MS);
  });
  return Promise.race([promesa, plazo]).finally(() => clearTimeout(reloj));
}

/** Loads a view in the harness with a tool call's input and result; returns its frame. */
async function abrir(nombre, toolInput, toolResult, hostCapabilities, dibujada = true) {
  await pagina.goto(base + "/anfitrion.html");
  // Resolves once the view has initialized and been sent the result: a view that never
  // initializes fails here instead of hanging.
  await conPlazo(
    pagina.evaluate(
      ([n, o]) => window.anfitrion.abrir(n, o),
      [nombre, { toolInput, toolResult, hostCapabilities: hostCapabilities || {}, hostContext: CONTEXTO_ANFITRION }]
    ),
    `${nombre}: la vista no completó ui/initialize`
  );
  const marco = await (await pagina.$("#marco")).contentFrame();
  if (dibujada) {
    await marco.waitForFunction(() => window.flotaVista && document.querySelector(".leaflet-marker-icon"), null, { timeout: ESPERA_MS });
  }
  await pagina.waitForFunction(() => window.anfitrion.registro.tamanos.length > 0, null, { timeout: ESPERA_MS });
  await esperarPintado(marco);
  return marco;
}

async function esperarPintado(marco) {
  await marco.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

/** The frame's pixels, with the frame's own coordinates (the harness frame has no border). */
async function captura(archivo) {
  const caja = await (await pagina.$("#marco")).boundingBox();
  const buffer = await pagina.screenshot({ clip: caja });
  if (archivo && CAPTURAS) {
    fs.mkdirSync(CAPTURAS, { recursive: true });
    fs.writeFileSync(path.join(CAPTURAS, archivo), buffer);
  }
  const png = PNG.sync.read(buffer);
  return {
    ancho: png.width,
    alto: png.height,
    en(x, y) {
      const xi = Math.round(x);
      const yi = Math.round(y);
      if (xi < 0 || yi < 0 || xi >= png.width || yi >= png.height) return null;
      const i = (yi * png.width + xi) * 4;
      return [png.data[i], png.data[i + 1], png.data[i + 2]];
    },
  };
}

function rgb(hex) {
  return [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
}

function parecido(a, b, tolerancia) {
  return a !== null && a.every((v, i) => Math.abs(v - b[i]) <= tolerancia);
}

/** Is one of `colores` within `radio` px of (x, y)? */
function colorCerca(imagen, x, y, colores, radio) {
  for (let dy = -radio; dy <= radio; dy++) {
    for (let dx = -radio; dx <= radio; dx++) {
      const p = imagen.en(x + dx, y + dy);
      if (colores.some((c) => parecido(p, c, 24))) return true;
    }
  }
  return false;
}

/** Boxes drawn over the map (markers, labels, controls, panels): what may hide the track. */
function tapas(marco) {
  return marco.evaluate(() =>
    [...document.querySelectorAll(".leaflet-marker-icon, .leaflet-tooltip, .leaflet-control, #evidencia:not([hidden])")].map((n) => {
      const r = n.getBoundingClientRect();
      return [r.left - 3, r.top - 3, r.right + 3, r.bottom + 3];
    })
  );
}

function tapado(cajas, [x, y]) {
  return cajas.some(([l, t, r, b]) => x >= l && x <= r && y >= t && y <= b);
}

function proyectar(marco, puntos) {
  return marco.evaluate((ps) => ps.map(([lat, lon]) => window.flotaVista.proyectar(lat, lon)), puntos);
}

async function centro(marco, selector) {
  return marco.$eval(selector, (n) => {
    const r = n.getBoundingClientRect();
    return [r.left + r.width / 2, r.top + r.height / 2];
  });
}

const distancia = (a, b) => Math.hypot(a[0] - b[0], a[1] - b[1]);

function sinProblemas(que) {
  // Only the harness's own files: a view asks for nothing, not even from the harness.
  const propias = ["/anfitrion.html", "/anfitrion.js", "/vistas/recorrido.html", "/vistas/flota.html"].map((p) => base + p);
  const fuera = problemas.red.filter((u) => !propias.includes(u) && !u.startsWith("data:") && !u.startsWith("about:"));
  assert.deepEqual(fuera, [], `${que}: peticiones fuera del anfitrión`);
  assert.deepEqual(problemas.consola, [], `${que}: errores de consola`);
  problemas.consola.length = 0;
  problemas.red.length = 0;
}

/** The view spoke first, in order: ui/initialize, then the initialized notification. */
async function protocoloEnOrden() {
  const mensajes = await pagina.evaluate(() => window.anfitrion.registro.mensajes);
  assert.equal(mensajes[0].method, "ui/initialize");
  assert.equal(mensajes[0].params.protocolVersion, "2026-01-26");
  assert.equal(mensajes[1].method, "ui/notifications/initialized");
  const tamanos = mensajes.filter((m) => m.method === "ui/notifications/size-changed").map((m) => m.params);
  assert.ok(tamanos.length > 0, "size-changed");
  for (const t of tamanos) assert.ok(t.height <= 500 && t.height > 0 && t.width > 0, JSON.stringify(t));
}

// --- Setup -----------------------------------------------------------------------------------

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "flota-vistas-"));
  db = path.join(tmp, "flota.db");
  execFileSync(FLOTA, ["simular", path.join(RAIZ, "escenarios", "minimo.toml"), "--ahora", AHORA, "--salida", db], {
    env: ENTORNO,
    stdio: ["ignore", "ignore", "pipe"],
  });
  servidor = new ServidorMcp(db, CON_APPS);
  await servidor.iniciar();
  servidorSinApps = new ServidorMcp(db, {});
  await servidorSinApps.iniciar();
  // Before the first shift: every unit parked, two of them at one depot.
  servidorDeposito = new ServidorMcp(db, CON_APPS, ["--ahora", "2026-08-19T05:00"]);
  await servidorDeposito.iniciar();
  for (const v of ["recorrido", "flota"]) fs.writeFileSync(path.join(tmp, v + ".html"), await documento("ui://flota/" + v));
  const herramientas = (await servidor.pedir("tools/list", {})).tools;
  for (const [nombre, vista] of [["mapa_recorrido", "recorrido"], ["mapa_flota", "flota"]]) {
    assert.equal(herramientas.find((t) => t.name === nombre)._meta.ui.resourceUri, "ui://flota/" + vista);
  }
  unidades = (await servidor.llamar("mapa_flota", {})).structuredContent.unidades.map((u) => u.placa);
  web = await servirArchivos();
  base = "http://127.0.0.1:" + web.address().port;
  contexto = await chromium.launchPersistentContext(path.join(tmp, "perfil"), {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    viewport: { width: 900, height: 760 },
    deviceScaleFactor: 1,
    timeout: 180000,
  });
  contexto.setDefaultTimeout(ESPERA_MS);
  pagina = contexto.pages()[0] || (await contexto.newPage());
  pagina.on("console", (m) => {
    if (m.type() === "error") problemas.consola.push(m.text());
  });
  pagina.on("pageerror", (e) => problemas.consola.push(String(e)));
  contexto.on("request", (r) => problemas.red.push(r.url()));
  await pagina.exposeFunction("llamarHerramienta", async (nombre, args) => {
    assert.equal(nombre, "mapa_recorrido");
    return resultadoRecorrido(args.placa, args.fecha);
  });
});

// A failed test leaves its problems behind; the next one starts clean.
beforeEach(() => {
  problemas.consola.length = 0;
  problemas.red.length = 0;
});

after(async () => {
  if (contexto) await contexto.close();
  if (web) web.close();
  for (const s of [servidor, servidorSinApps, servidorDeposito]) if (s) s.cerrar();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

// --- The day view ----------------------------------------------------------------------------

/** Checks the day view on a result (the real one unless given); returns the map's zoom. */
async function comprobarRecorrido(placa, fecha, capturar, dado) {
  const resultado = dado || (await resultadoRecorrido(placa, fecha));
  assert.ok(!resultado.isError, JSON.stringify(resultado.content));
  const sc = resultado.structuredContent;
  const v = sc.vista;
  const marco = await abrir("recorrido", { placa, fecha }, resultado);
  await protocoloEnOrden();

  // One marker per counted stop, speeding episode and signal loss.
  const marcas = await marco.$$eval(".evento", (ns) => ns.map((n) => n.dataset.tipo));
  const cuantas = (tipo) => marcas.filter((t) => t === tipo).length;
  assert.equal(cuantas("parada"), sc.paradas, "paradas");
  assert.equal(cuantas("exceso_velocidad"), sc.excesos_de_velocidad, "excesos");
  assert.equal(cuantas("perdida_senal"), sc.perdidas_de_senal, "pérdidas de señal");
  assert.equal(await marco.$$eval(".evento.prolongada", (ns) => ns.length), sc.paradas_prolongadas, "prolongadas");
  assert.equal(await marco.locator(".inicio").count(), 1);
  assert.equal(await marco.locator(".fin").count(), 1);
  const geocercas = await marco.$$eval(".rotulo-geocerca", (ns) => ns.map((n) => n.textContent));
  for (const nombre of sc.geocercas_visitadas) assert.ok(geocercas.includes(nombre), nombre);

  // The track: a band colour at (or within 3 px of) every report that has a drawn segment
  // and is not under a marker, label or control.
  const imagen = await captura();
  const colores = v.bandas.map((b) => rgb(b.color));
  const cortes = new Set(v.cortes);
  // Every report with a drawn segment, one per 4 px (a stop's many reports are one place).
  const proyectados = await proyectar(marco, v.reportes.map((r) => [r[1], r[2]]));
  const indices = [];
  const puntos = [];
  const ocupado = new Set();
  proyectados.forEach((p, i) => {
    const antes = i > 0 && !cortes.has(i);
    const despues = i + 1 < v.reportes.length && !cortes.has(i + 1);
    const celda = Math.round(p[0] / 4) + "," + Math.round(p[1] / 4);
    if ((antes || despues) && !ocupado.has(celda)) {
      ocupado.add(celda);
      indices.push(i);
      puntos.push(p);
    }
  });
  const cajas = await tapas(marco);
  const mapa = await marco.$eval("#mapa", (n) => {
    const r = n.getBoundingClientRect();
    return [r.left, r.top, r.right, r.bottom];
  });
  let vistos = 0;
  const faltan = [];
  puntos.forEach((p, k) => {
    assert.ok(p[0] >= mapa[0] && p[0] <= mapa[2] && p[1] >= mapa[1] && p[1] <= mapa[3], `reporte ${indices[k]} fuera del mapa`);
    if (tapado(cajas, p)) return;
    vistos++;
    if (!colorCerca(imagen, p[0], p[1], colores, 3)) faltan.push(indices[k]);
  });
  console.log(`${placa} ${fecha}: ${vistos} de ${indices.length} lugares del trazo a la vista`);
  assert.ok(vistos >= indices.length / 2, `solo ${vistos} de ${indices.length} lugares del trazo a la vista`);
  assert.deepEqual(faltan, [], "reportes sin el color del trazo");

  // The slider moves the replay marker to the report of the chosen time, with its clock.
  const hora = new Intl.DateTimeFormat("es", { timeZone: v.zona_horaria, hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" });
  const reloj = (t) => hora.format(new Date((v.inicio_utc + t) * 1000));
  const inicio = await centro(marco, ".marcador-reproduccion");
  const [pInicio] = await proyectar(marco, [[v.reportes[0][1], v.reportes[0][2]]]);
  assert.ok(distancia(inicio, pInicio) <= 3, "el marcador empieza en el primer reporte");
  const todos = await proyectar(marco, v.reportes.map((r) => [r[1], r[2]]));
  let lejos = 0;
  todos.forEach((p, i) => {
    if (distancia(p, pInicio) > distancia(todos[lejos], pInicio)) lejos = i;
  });
  const t = v.reportes[lejos][0];
  await marco.$eval("#deslizador", (n, valor) => {
    n.value = String(valor);
    n.dispatchEvent(new Event("input", { bubbles: true }));
  }, t);
  await esperarPintado(marco);
  const movido = await centro(marco, ".marcador-reproduccion");
  assert.ok(distancia(movido, todos[lejos]) <= 3, `marcador en ${movido}, reporte ${lejos} en ${todos[lejos]}`);
  assert.ok(distancia(movido, inicio) > 10, "el marcador se movió");
  assert.equal(await marco.textContent("#reloj"), reloj(t));
  // The keyboard reaches the end of the day.
  await marco.focus("#deslizador");
  await pagina.keyboard.press("End");
  await esperarPintado(marco);
  const tFin = v.reportes[v.reportes.length - 1][0];
  assert.equal(Number(await marco.inputValue("#deslizador")), tFin);
  assert.ok(distancia(await centro(marco, ".marcador-reproduccion"), todos[todos.length - 1]) <= 3, "fin del día");
  assert.equal(await marco.textContent("#reloj"), reloj(tFin));
  // Play advances the time.
  await pagina.keyboard.press("Home");
  await marco.click("#reproducir");
  await marco.waitForFunction(() => Number(document.getElementById("deslizador").value) > 0, null, { timeout: ESPERA_MS });
  await marco.click("#reproducir");

  // A click on each kind of event opens its evidence, every field of it, and seeks the slider.
  const caja = await (await pagina.$("#marco")).boundingBox();
  for (const tipo of new Set(marcas)) {
    const indice = await marco.$$eval(`.evento[data-tipo="${tipo}"]`, (ns) => {
      for (const n of ns) {
        const r = n.getBoundingClientRect();
        const arriba = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        if (arriba && arriba.closest(".evento") === n) return Number(n.dataset.indice);
      }
      return -1;
    });
    assert.ok(indice >= 0, `ningún marcador de ${tipo} se puede pulsar`);
    const evento = v.eventos[indice];
    const [x, y] = await centro(marco, `.evento[data-indice="${indice}"]`);
    await pagina.mouse.click(caja.x + x, caja.y + y);
    await marco.waitForSelector("#evidencia:not([hidden])");
    assert.equal(await marco.textContent("#evidencia-titulo"), evento.titulo);
    const campos = await marco.$$eval("#evidencia-campos > dt", (ns) => ns.map((n) => n.dataset.campo));
    for (const campo of Object.keys(evento.evidencia)) assert.ok(campos.includes(campo), `${tipo}: falta ${campo}`);
    const esperado = Math.min(tFin, Math.max(0, evento.inicio_utc - v.inicio_utc));
    assert.equal(Number(await marco.inputValue("#deslizador")), esperado);
    if (capturar && tipo === "exceso_velocidad") await captura(capturar);
    await pagina.keyboard.press("Escape");
    await marco.waitForSelector("#evidencia", { state: "hidden" });
  }
  if (capturar && !marcas.includes("exceso_velocidad")) await captura(capturar);
  sinProblemas(`${placa} ${fecha}`);
  return marco.evaluate(() => window.flotaVista.mapa.getZoom());
}

test("la vista del día dibuja cada recorrido real con sus eventos", PLAZO_PRUEBA, async () => {
  for (const placa of unidades) {
    for (const fecha of ["ayer", "hoy"]) {
      await comprobarRecorrido(placa, fecha, placa === "P-456DEF" && fecha === "ayer" ? "mapa_recorrido_vista.png" : null);
    }
  }
});

test("la vista del día pide otro día por tools/call a través del anfitrión", PLAZO_PRUEBA, async () => {
  const resultado = await resultadoRecorrido("P-456DEF", "hoy");
  const marco = await abrir("recorrido", { placa: "P-456DEF", fecha: "hoy" }, resultado, { serverTools: {} });
  const anterior = marco.locator('#navegacion button[data-fecha="2026-08-18"]');
  await anterior.click();
  await marco.waitForFunction(() => document.getElementById("titulo").textContent.includes("2026-08-18"));
  await marco.waitForFunction(() => window.flotaVista && document.querySelector(".marcador-reproduccion"));
  const llamadas = await pagina.evaluate(() => window.anfitrion.registro.herramientas);
  assert.deepEqual(llamadas, [{ name: "mapa_recorrido", arguments: { placa: "P-456DEF", fecha: "2026-08-18" } }]);
  const otro = (await resultadoRecorrido("P-456DEF", "2026-08-18")).structuredContent;
  assert.equal(await marco.locator('.evento[data-tipo="parada"]').count(), otro.paradas);
  assert.equal(await marco.locator('.evento[data-tipo="exceso_velocidad"]').count(), otro.excesos_de_velocidad);
  sinProblemas("otro día");
});

test("sin el campo vista (un cliente sin la extensión), la vista del día lo dice sin fallar", PLAZO_PRUEBA, async () => {
  const resultado = await servidorSinApps.llamar("mapa_recorrido", { placa: unidades[0], fecha: "ayer" });
  assert.equal(resultado.structuredContent.vista, undefined);
  const marco = await abrir("recorrido", { placa: unidades[0], fecha: "ayer" }, resultado, {}, false);
  await protocoloEnOrden();
  await marco.waitForFunction(() => document.getElementById("estado").textContent.includes("vista"));
  const estado = await marco.textContent("#estado");
  assert.ok(estado.includes(`${resultado.structuredContent.paradas} parada`), estado);
  assert.equal(await marco.textContent("#titulo"), `${unidades[0]} · ${resultado.structuredContent.dia_semana} ${resultado.structuredContent.fecha}`);
  assert.equal(await marco.locator(".leaflet-container").count(), 0);
  sinProblemas("sin vista");
});

/**
 * The same result `grados` further east, longitudes wrapped to [−180, 180] as a server
 * sends them: every place the views draw (reports, events, the basemap, the units).
 */
function alEste(resultado, grados) {
  const movido = JSON.parse(JSON.stringify(resultado));
  const lon = (x) => ((((x + grados + 180) % 360) + 360) % 360) - 180;
  const par = (p) => [p[0], lon(p[1])];
  const sc = movido.structuredContent;
  const v = sc.vista;
  for (const r of v.reportes || []) r[2] = lon(r[2]);
  for (const e of v.eventos || []) {
    e.lon = lon(e.lon);
    if (Array.isArray(e.hasta)) e.hasta = par(e.hasta);
  }
  for (const r of v.rutas || []) r.puntos = r.puntos.map(par);
  for (const g of v.geocercas || []) g.contorno = g.contorno.map(par);
  for (const l of v.lugares || []) l.lon = lon(l.lon);
  for (const u of sc.unidades || []) if (typeof u.lon === "number") u.lon = lon(u.lon);
  return movido;
}

/** Degrees east that put the middle of `lons` on 180°. */
const hasta180 = (lons) => 180 - (Math.min(...lons) + Math.max(...lons)) / 2;

function cruza180(lons) {
  assert.ok(lons.some((x) => x > 179) && lons.some((x) => x < -179), `no cruza ±180°: ${Math.min(...lons)}…${Math.max(...lons)}`);
}

test("un día a ambos lados de ±180° se dibuja en una pieza, encuadrado como el mismo día en otro lugar", PLAZO_PRUEBA, async () => {
  const real = await resultadoRecorrido("P-456DEF", "ayer");
  const zoomReal = await comprobarRecorrido("P-456DEF", "ayer", null, real);
  const movido = alEste(real, hasta180(real.structuredContent.vista.reportes.map((r) => r[2])));
  cruza180(movido.structuredContent.vista.reportes.map((r) => r[2]));
  // Every check of the day view holds (each report inside the map, with the track's colour),
  // and the day is framed as closely as where it really is, not as the whole world.
  const zoom = await comprobarRecorrido("P-456DEF", "ayer", null, movido);
  assert.ok(Math.abs(zoom - zoomReal) <= 0.5, `zoom ${zoom}, en su lugar ${zoomReal}`);
});

// --- The fleet view --------------------------------------------------------------------------

/** Checks the fleet view on a result (the server's unless given); returns it and the zoom. */
async function comprobarFlota(servidorFlota, capturar, dado) {
  const resultado = dado || (await servidorFlota.llamar("mapa_flota", {}));
  assert.ok(!resultado.isError, JSON.stringify(resultado.content));
  const sc = resultado.structuredContent;
  assert.equal(sc.unidades.length, unidades.length);
  assert.equal(sc.vista.version, 1);
  const marco = await abrir("flota", {}, resultado);
  await protocoloEnOrden();

  const marcas = await marco.$$eval(".unidad", (ns) =>
    ns.map((n) => ({ placa: n.dataset.placa, estado: n.dataset.estado, rotulo: n.querySelector(".rotulo").textContent, color: getComputedStyle(n.querySelector(".punto")).backgroundColor }))
  );
  assert.equal(marcas.length, sc.unidades.length);
  const imagen = await captura(capturar);
  const puntos = await proyectar(marco, sc.unidades.map((u) => [u.lat, u.lon]));
  // Each unit's dot, where it was drawn: near its position, and clear of every other dot
  // (units at one place are fanned out, none hides another).
  const centros = [];
  for (const u of sc.unidades) centros.push(await centro(marco, `.unidad[data-placa="${u.placa}"] .punto`));
  centros.forEach((c, i) => {
    assert.ok(distancia(c, puntos[i]) <= 40, `${sc.unidades[i].placa}: punto a ${distancia(c, puntos[i])} px de su posición`);
    for (let j = 0; j < i; j++) assert.ok(distancia(c, centros[j]) >= 18, `${sc.unidades[i].placa} tapa a ${sc.unidades[j].placa}`);
  });
  const colorPorEstado = new Map();
  sc.unidades.forEach((u, i) => {
    const m = marcas.find((x) => x.placa === u.placa);
    assert.ok(m, u.placa);
    assert.equal(m.estado, u.estado);
    assert.ok(m.rotulo.startsWith(u.placa));
    if (typeof u.minutos_en_estado === "number") assert.match(m.rotulo, /min$/);
    const color = m.color.match(/\d+/g).slice(0, 3).map(Number);
    // The unit's dot shows its state's colour, and states do not share one.
    assert.ok(colorCerca(imagen, centros[i][0], centros[i][1], [color], 1), `${u.placa}: color ${color}`);
    for (const [estado, otro] of colorPorEstado) if (estado !== u.estado) assert.notDeepEqual(otro, color);
    colorPorEstado.set(u.estado, color);
  });
  const leyenda = await marco.textContent(".leyenda");
  for (const [clave, n] of Object.entries(sc.por_estado)) if (n > 0) assert.ok(leyenda.includes(`(${n})`), clave);

  // A click on a unit shows all its fields.
  const u = sc.unidades[0];
  const caja = await (await pagina.$("#marco")).boundingBox();
  const [x, y] = centros[0];
  await pagina.mouse.click(caja.x + x, caja.y + y);
  await marco.waitForSelector("#evidencia:not([hidden])");
  const campos = await marco.$$eval("#evidencia-campos > dt", (ns) => ns.map((n) => n.dataset.campo));
  assert.deepEqual(campos, Object.keys(u));

  // The height follows the host's limit.
  await pagina.evaluate(() => window.anfitrion.notificar("ui/notifications/host-context-changed", { containerDimensions: { width: 860, maxHeight: 320 } }));
  await pagina.waitForFunction(() => window.anfitrion.registro.tamanos.at(-1).height === 320);
  assert.equal(await marco.$eval("#app", (n) => Math.round(n.getBoundingClientRect().height)), 320);
  const zoom = await marco.evaluate(() => window.flotaVista.mapa.getZoom());
  sinProblemas("flota");
  return { sc, zoom };
}

test("la vista de la flota muestra cada unidad activa con su estado y minutos", PLAZO_PRUEBA, async () => {
  await comprobarFlota(servidor, "mapa_flota_vista.png");
});

test("una flota a ambos lados de ±180° se dibuja en una pieza", PLAZO_PRUEBA, async () => {
  const real = await servidor.llamar("mapa_flota", {});
  const { zoom: zoomReal } = await comprobarFlota(servidor, null, real);
  const movido = alEste(real, hasta180(real.structuredContent.unidades.map((u) => u.lon)));
  cruza180(movido.structuredContent.unidades.map((u) => u.lon));
  const { zoom } = await comprobarFlota(servidor, null, movido);
  assert.ok(Math.abs(zoom - zoomReal) <= 0.5, `zoom ${zoom}, en su lugar ${zoomReal}`);
});

test("en la vista de la flota, las unidades en un mismo lugar no se tapan", PLAZO_PRUEBA, async () => {
  const { sc } = await comprobarFlota(servidorDeposito, "mapa_flota_deposito.png");
  // The case this test is for: at least two units reported from one place — one depot, their
  // fixes GPS noise apart (σ 5 m: tens of metres at most, under 5e-4° ≈ 50 m), which at the
  // fleet's zoom is the same pixel or two.
  const juntas = sc.unidades.some((u, i) => sc.unidades.some((o, j) => j < i && Math.hypot(u.lat - o.lat, u.lon - o.lon) < 5e-4));
  assert.ok(juntas, "ninguna unidad comparte lugar a las 05:00");
});

test("en la vista de la flota, muchas unidades en un lugar son un solo grupo con su número", PLAZO_PRUEBA, async () => {
  // A crowded depot made from a real result: 30 more units parked at the first unit's place
  // (a few metres apart), beside the real ones. The view must not fan them out across the map.
  const real = await servidorDeposito.llamar("mapa_flota", {});
  const resultado = JSON.parse(JSON.stringify(real));
  const sc = resultado.structuredContent;
  const modelo = sc.unidades[0];
  for (let i = 0; i < 30; i++) {
    sc.unidades.push({ ...modelo, placa: "G-" + String(i).padStart(3, "0"), lat: modelo.lat + (i % 5) * 1e-5, lon: modelo.lon + Math.floor(i / 5) * 1e-5 });
  }
  sc.total = sc.unidades.length;
  const clave = { "en movimiento": "en_movimiento", "detenida con motor encendido": "motor_encendido", apagada: "apagada", "sin señal": "sin_senal" }[modelo.estado];
  sc.por_estado[clave] += 30;
  const marco = await abrir("flota", {}, resultado);
  await protocoloEnOrden();
  const grupos = await marco.$$eval(".grupo-unidades", (ns) => ns.map((n) => ({ n: Number(n.dataset.unidades), placas: n.dataset.placas.split(" ") })));
  assert.ok(grupos.length >= 1, "ningún grupo");
  const visibles = await marco.$$eval(".unidad", (ns) => ns.filter((n) => n.style.display !== "none").map((n) => n.dataset.placa));
  // Every unit is shown exactly once: its own dot, or counted in one group.
  const vistas = visibles.concat(...grupos.map((g) => g.placas));
  assert.deepEqual([...vistas].sort(), sc.unidades.map((u) => u.placa).sort());
  for (const g of grupos) {
    assert.equal(g.n, g.placas.length);
    assert.ok(g.n > 12, `un grupo de ${g.n}: los de hasta 12 se abren en abanico`);
  }
  const grupo = grupos.find((g) => g.placas.includes("G-000"));
  assert.ok(grupo && grupo.n >= 31, JSON.stringify(grupos));
  // Its number is on it, and its ring has the state's colour.
  assert.equal((await marco.textContent(".grupo-unidades .cuenta")).trim(), String(grupo.n));
  const imagen = await captura("mapa_flota_grupos.png");
  const [x, y] = await centro(marco, ".grupo-unidades .anillo");
  const r = (await marco.$eval(".grupo-unidades .anillo", (n) => n.getBoundingClientRect().width)) / 2;
  const color = (await marco.$eval(`.unidad[data-placa="G-000"] .punto`, (n) => getComputedStyle(n).backgroundColor)).match(/\d+/g).slice(0, 3).map(Number);
  const enAnillo = [...Array(36).keys()].some((k) => colorCerca(imagen, x + (r - 2) * Math.sin((k * Math.PI) / 18), y - (r - 2) * Math.cos((k * Math.PI) / 18), [color], 1));
  assert.ok(enAnillo, `anillo sin ${color}`);
  // No dot within 18 px of another or inside the group's disc.
  const centros = [];
  for (const placa of visibles) centros.push(await centro(marco, `.unidad[data-placa="${placa}"] .punto`));
  centros.forEach((c, i) => {
    assert.ok(distancia(c, [x, y]) >= r + 9, `${visibles[i]} bajo el grupo`);
    for (let j = 0; j < i; j++) assert.ok(distancia(c, centros[j]) >= 18, `${visibles[i]} tapa a ${visibles[j]}`);
  });
  // A click on the group zooms to its units.
  const antes = await marco.evaluate(() => window.flotaVista.mapa.getZoom());
  const caja = await (await pagina.$("#marco")).boundingBox();
  await pagina.mouse.click(caja.x + x, caja.y + y);
  await marco.waitForFunction((z) => window.flotaVista.mapa.getZoom() > z || !document.querySelector("#evidencia").hidden, antes);
  sinProblemas("flota con grupos");
});
