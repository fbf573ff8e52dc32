/* flota: what both map views share.
 *
 * - Puente: the view side of the MCP Apps protocol (io.modelcontextprotocol/ui, 2026-01-26),
 *   JSON-RPC 2.0 over postMessage with the parent window only: ui/initialize, then
 *   ui/notifications/initialized; the host's notifications (tool-input, tool-result,
 *   tool-cancelled, host-context-changed) and requests (ui/resource-teardown, ping); the view's
 *   own ui/notifications/size-changed and proxied tools/call.
 * - Host context: theme, CSS variables, height (at most 500 px unless the host allows more).
 * - Map pieces: the map with the offline basemap (the fleet's routes, fences and places) or
 *   configured tiles, the evidence panel that shows any fields it is given, the legend.
 *
 * Text from a result reaches the page only through textContent or escaparHtml.
 */
"use strict";

const PROTOCOLO_UI = "2026-01-26";
const ALTURA_MAXIMA_PX = 500;

/** The view's end of the JSON-RPC channel with the host. */
class Puente {
  constructor(appInfo) {
    this.appInfo = appInfo;
    this.siguiente = 1;
    this.pendientes = new Map();
    this.manejadores = new Map();
    this.capacidades = {};
    this.contexto = {};
    window.addEventListener("message", (e) => this.recibir(e));
  }

  /** Registers the handler of a host notification or request. */
  en(metodo, fn) {
    this.manejadores.set(metodo, fn);
  }

  enviar(mensaje) {
    window.parent.postMessage(mensaje, "*");
  }

  notificar(metodo, params) {
    this.enviar({ jsonrpc: "2.0", method: metodo, params: params || {} });
  }

  pedir(metodo, params, plazoMs) {
    const id = this.siguiente++;
    return new Promise((resolver, rechazar) => {
      const reloj = setTimeout(() => {
        this.pendientes.delete(id);
        rechazar(new Error("El cliente no respondió a " + metodo + "."));
      }, plazoMs || 30000);
      this.pendientes.set(id, { resolver, rechazar, reloj });
      this.enviar({ jsonrpc: "2.0", id, method: metodo, params: params || {} });
    });
  }

  recibir(evento) {
    // Only the host that embeds this frame speaks to it.
    if (evento.source !== window.parent) return;
    const m = evento.data;
    if (!m || typeof m !== "object" || m.jsonrpc !== "2.0") return;
    if (typeof m.method === "string") {
      if (m.id !== undefined && m.id !== null) {
        this.atender(m);
      } else {
        const fn = this.manejadores.get(m.method);
        if (fn) fn(m.params || {});
      }
      return;
    }
    const pendiente = this.pendientes.get(m.id);
    if (!pendiente) return;
    this.pendientes.delete(m.id);
    clearTimeout(pendiente.reloj);
    if (m.error) {
      pendiente.rechazar(new Error(m.error.message || "El cliente devolvió un error."));
    } else {
      pendiente.resolver(m.result);
    }
  }

  atender(m) {
    const fn = this.manejadores.get(m.method);
    if (fn) {
      Promise.resolve()
        .then(() => fn(m.params || {}))
        .then((r) => this.enviar({ jsonrpc: "2.0", id: m.id, result: r || {} }))
        .catch((e) => this.enviar({ jsonrpc: "2.0", id: m.id, error: { code: -32603, message: String(e && e.message) } }));
    } else if (m.method === "ping" || m.method === "ui/resource-teardown") {
      this.enviar({ jsonrpc: "2.0", id: m.id, result: {} });
    } else {
      this.enviar({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "La vista no atiende " + m.method } });
    }
  }

  /** ui/initialize, then ui/notifications/initialized: nothing reaches the view before. */
  async iniciar() {
    const r = await this.pedir("ui/initialize", {
      protocolVersion: PROTOCOLO_UI,
      appInfo: this.appInfo,
      appCapabilities: { availableDisplayModes: ["inline"] },
    });
    this.capacidades = (r && r.hostCapabilities) || {};
    this.contexto = (r && r.hostContext) || {};
    this.notificar("ui/notifications/initialized", {});
    return r || {};
  }

  /** Calls a server tool through the host (read-only tools only, by the host's rules). */
  puedeLlamarHerramientas() {
    return Boolean(this.capacidades.serverTools);
  }

  llamarHerramienta(nombre, argumentos) {
    return this.pedir("tools/call", { name: nombre, arguments: argumentos }, 60000);
  }
}

// --- Host context: theme, variables, size ---------------------------------------------------

let ultimoTamano = null;

/** Height the view takes: the host's fixed height, else 500 px (more only in fullscreen), never above its maximum. */
function alturaDeseada(contexto) {
  const dims = (contexto && contexto.containerDimensions) || {};
  if (typeof dims.height === "number" && dims.height > 0) return Math.floor(dims.height);
  let alto = ALTURA_MAXIMA_PX;
  if (contexto && contexto.displayMode === "fullscreen" && typeof dims.maxHeight === "number") alto = dims.maxHeight;
  if (typeof dims.maxHeight === "number" && dims.maxHeight > 0) alto = Math.min(alto, dims.maxHeight);
  return Math.floor(alto);
}

function aplicarContexto(puente, cambios, alCambiarTamano) {
  const c = Object.assign(puente.contexto, cambios || {});
  document.documentElement.classList.toggle("oscuro", c.theme === "dark");
  const variables = c.styles && c.styles.variables;
  if (variables && typeof variables === "object") {
    for (const [clave, valor] of Object.entries(variables)) {
      if (clave.startsWith("--") && typeof valor === "string") document.documentElement.style.setProperty(clave, valor);
    }
  }
  const alto = alturaDeseada(c);
  document.documentElement.style.setProperty("--alto", alto + "px");
  if (alCambiarTamano) alCambiarTamano();
  informarTamano(puente);
}

function informarTamano(puente) {
  const app = document.getElementById("app");
  const caja = app.getBoundingClientRect();
  const tamano = { width: Math.ceil(caja.width), height: Math.ceil(caja.height) };
  if (ultimoTamano && ultimoTamano.width === tamano.width && ultimoTamano.height === tamano.height) return;
  ultimoTamano = tamano;
  puente.notificar("ui/notifications/size-changed", tamano);
}

// --- Small helpers ---------------------------------------------------------------------------

function el(etiqueta, clase, texto) {
  const nodo = document.createElement(etiqueta);
  if (clase) nodo.className = clase;
  if (texto !== undefined && texto !== null) nodo.textContent = String(texto);
  return nodo;
}

function mostrarEstado(texto) {
  const estado = document.getElementById("estado");
  estado.textContent = texto || "";
  estado.hidden = !texto;
}

function mostrarAviso(texto) {
  const aviso = document.getElementById("aviso");
  aviso.textContent = texto || "";
  aviso.hidden = !texto;
}

/** The text blocks of a tool result, joined (what text-only clients show). */
function textoDelResultado(resultado) {
  const bloques = (resultado && Array.isArray(resultado.content) ? resultado.content : []);
  return bloques.filter((b) => b && b.type === "text").map((b) => b.text).join("\n");
}

/** "1 parada", "3 paradas". */
function cuenta(n, singular, plural) {
  return n + " " + (n === 1 ? singular : plural);
}

function numero(v, decimales) {
  return Number(v).toLocaleString("es", { maximumFractionDigits: decimales === undefined ? 1 : decimales });
}

/** A clock in the fleet's zone: Intl when it knows the zone, else the day's fixed offset. */
function formateadorHora(zona, desfaseS) {
  try {
    const f = new Intl.DateTimeFormat("es", { timeZone: zona, hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" });
    return (tsUtc) => f.format(new Date(tsUtc * 1000));
  } catch (_) {
    return (tsUtc) => new Date((tsUtc + (desfaseS || 0)) * 1000).toISOString().slice(11, 19);
  }
}

function escaparHtml(texto) {
  return String(texto).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

// --- Evidence panel --------------------------------------------------------------------------

/** Field names are ASCII snake case with units last (`velocidad_max_kmh`): written out for people. */
const PALABRAS = {
  kmh: "(km/h)",
  km: "(km)",
  min: "mín.",
  max: "máx.",
  limite: "límite",
  senal: "señal",
  ultima: "última",
  ultimo: "último",
  posicion: "posición",
  direccion: "dirección",
  dias: "días",
};

function etiquetaDeCampo(clave) {
  const texto = String(clave)
    .split("_")
    .filter(Boolean)
    .map((p) => PALABRAS[p] || p)
    .join(" ");
  return texto.charAt(0).toUpperCase() + texto.slice(1);
}

/** Any JSON value as nodes: scalars as text, objects and arrays as nested lists. */
function valorComoNodo(valor, profundidad) {
  if (valor === null || valor === undefined) return document.createTextNode("—");
  if (typeof valor === "boolean") return document.createTextNode(valor ? "sí" : "no");
  if (typeof valor === "number") return document.createTextNode(numero(valor, 6));
  if (typeof valor !== "object") return document.createTextNode(String(valor));
  if (profundidad > 4) return document.createTextNode(JSON.stringify(valor));
  if (Array.isArray(valor)) {
    if (valor.every((v) => v === null || typeof v !== "object")) {
      return document.createTextNode(valor.map((v) => valorComoNodo(v, profundidad + 1).textContent).join(", "));
    }
    const lista = el("ol");
    for (const v of valor) {
      const li = el("li");
      li.appendChild(valorComoNodo(v, profundidad + 1));
      lista.appendChild(li);
    }
    return lista;
  }
  const dl = el("dl");
  llenarCampos(dl, valor, profundidad + 1);
  return dl;
}

function llenarCampos(dl, campos, profundidad) {
  for (const [clave, valor] of Object.entries(campos)) {
    const dt = el("dt", null, etiquetaDeCampo(clave));
    dt.dataset.campo = clave;
    const dd = el("dd");
    dd.appendChild(valorComoNodo(valor, profundidad));
    dl.append(dt, dd);
  }
}

const Evidencia = {
  mostrar(titulo, campos) {
    const panel = document.getElementById("evidencia");
    document.getElementById("evidencia-titulo").textContent = titulo;
    const dl = document.getElementById("evidencia-campos");
    dl.replaceChildren();
    llenarCampos(dl, campos || {}, 0);
    panel.hidden = false;
  },
  cerrar() {
    document.getElementById("evidencia").hidden = true;
  },
  iniciar() {
    document.getElementById("evidencia-cerrar").addEventListener("click", () => Evidencia.cerrar());
    document.addEventListener("keydown", (e) => {
      if (e.key === "Escape") Evidencia.cerrar();
    });
  },
};

// --- Map -------------------------------------------------------------------------------------

const COLOR_GEOCERCA = "#7b3294";

/** A Leaflet map over configured tiles or, without them, the fleet's own vector basemap. */
function crearMapa(teselas) {
  const contenedor = document.getElementById("mapa");
  const mapa = L.map(contenedor, { zoomSnap: 0.25, zoomDelta: 0.5, wheelPxPerZoomLevel: 120, maxZoom: 19 });
  mapa.attributionControl.setPrefix(false);
  if (teselas && typeof teselas.plantilla === "string" && teselas.plantilla) {
    L.tileLayer(teselas.plantilla, { attribution: escaparHtml(teselas.atribucion || ""), maxZoom: 19 }).addTo(mapa);
  } else {
    mapa.attributionControl.addAttribution("Fondo sin conexión: rutas y geocercas de la flota");
  }
  L.control.scale({ imperial: false }).addTo(mapa);
  mapa.createPane("rutas").style.zIndex = 350;
  mapa.createPane("geocercas").style.zIndex = 360;
  // Fence names sit above the areas but below every marker (Leaflet's tooltip pane is above
  // markers, where a depot's name would hide the units parked in it).
  mapa.createPane("rotulosGeocercas").style.zIndex = 450;
  return mapa;
}

/** Routes as light roads, fences as named purple areas, route stops as small place names. */
function dibujarMapaBase(mapa, base, alPulsarGeocerca) {
  const capas = [];
  const conTeselas = Boolean(base.teselas);
  for (const ruta of base.rutas || []) {
    if (!Array.isArray(ruta.puntos) || ruta.puntos.length < 2) continue;
    if (!conTeselas) {
      capas.push(L.polyline(ruta.puntos, { pane: "rutas", color: "#cfc6b8", weight: 7, opacity: 1, interactive: false }));
      capas.push(L.polyline(ruta.puntos, { pane: "rutas", color: "#ffffff", weight: 4, opacity: 1, interactive: false }));
    }
  }
  for (const g of base.geocercas || []) {
    if (!Array.isArray(g.contorno) || g.contorno.length < 3) continue;
    const area = L.polygon(g.contorno, { pane: "geocercas", color: COLOR_GEOCERCA, weight: 2, fillOpacity: 0.12, className: "geocerca" });
    area.bindTooltip(escaparHtml(g.nombre), { pane: "rotulosGeocercas", permanent: true, direction: "center", className: "rotulo-geocerca", interactive: false });
    if (alPulsarGeocerca) area.on("click", () => alPulsarGeocerca(g));
    capas.push(area);
  }
  for (const lugar of base.lugares || []) {
    const icono = L.divIcon({ className: "lugar", html: escaparHtml(lugar.nombre), iconSize: null });
    capas.push(L.marker([lugar.lat, lugar.lon], { icon: icono, interactive: false, keyboard: false }));
  }
  const grupo = L.layerGroup(capas).addTo(mapa);
  // Place names only where there is room for them.
  const actualizar = () => document.getElementById("mapa").classList.toggle("sin-lugares", mapa.getZoom() < 14);
  mapa.on("zoomend", actualizar);
  actualizar();
  return grupo;
}

/**
 * Moves a longitude to the world copy nearest the middle of the shortest arc that holds every
 * longitude in `lons`. Leaflet draws a longitude where it is: a day from 179.9° to −179.9° (an
 * operator in Fiji) would be drawn across the whole Pacific and framed as the whole world. The
 * shortest arc is the circle less the widest gap between neighbouring longitudes, as the PNG
 * maps frame it (src/map/scene.rs); data that does not cross ±180° keeps its longitudes.
 */
function mundoCercano(lons) {
  const orden = lons
    .filter((x) => Number.isFinite(x))
    .map((x) => ((((x + 180) % 360) + 360) % 360) - 180)
    .sort((a, b) => a - b);
  if (orden.length === 0) return (lon) => lon;
  // The gap across ±180° first: when no gap inside is wider, the plain range is the arc.
  let hueco = orden[0] + 360 - orden[orden.length - 1];
  let desde = orden[0];
  for (let i = 1; i < orden.length; i++) {
    if (orden[i] - orden[i - 1] > hueco) {
      hueco = orden[i] - orden[i - 1];
      desde = orden[i];
    }
  }
  const centro = desde + (360 - hueco) / 2;
  return (lon) => lon - 360 * Math.round((lon - centro) / 360);
}

/** The basemap's routes, fences and places on the world copy that `cerca` picks. */
function mapaBaseCercano(base, cerca) {
  const par = (p) => [p[0], cerca(p[1])];
  return Object.assign({}, base, {
    rutas: (base.rutas || []).map((r) => (Array.isArray(r.puntos) ? Object.assign({}, r, { puntos: r.puntos.map(par) }) : r)),
    geocercas: (base.geocercas || []).map((g) => (Array.isArray(g.contorno) ? Object.assign({}, g, { contorno: g.contorno.map(par) }) : g)),
    lugares: (base.lugares || []).map((l) => Object.assign({}, l, { lon: cerca(l.lon) })),
  });
}

/** A marker whose icon is an element we build (classes, data attributes, keyboard access). */
function marcadorDom(latlon, elemento, tamano, opciones) {
  const icono = L.divIcon({ className: elemento.className, html: elemento.innerHTML, iconSize: tamano, iconAnchor: tamano && [tamano[0] / 2, tamano[1] / 2] });
  const marcador = L.marker(latlon, Object.assign({ icon: icono, keyboard: true, riseOnHover: true }, opciones || {}));
  marcador.on("add", () => {
    const nodo = marcador.getElement();
    for (const [k, v] of Object.entries(elemento.dataset)) nodo.dataset[k] = v;
    if (elemento.title) nodo.setAttribute("aria-label", elemento.title);
    if (elemento.style.cssText) nodo.style.cssText += ";" + elemento.style.cssText;
  });
  return marcador;
}

/** A collapsible legend in a map corner: rows of [swatch element, text]. */
function leyenda(mapa, titulo, filas) {
  const control = L.control({ position: "bottomleft" });
  control.onAdd = () => {
    const caja = el("details", "leyenda");
    // Open only where it leaves the track in view; a click opens it anywhere.
    const tamano = mapa.getSize();
    caja.open = tamano.x >= 700 && tamano.y >= 450;
    caja.appendChild(el("summary", null, titulo));
    const lista = el("ul");
    for (const [muestra, texto] of filas) {
      const li = el("li");
      li.append(muestra, el("span", null, texto));
      lista.appendChild(li);
    }
    caja.appendChild(lista);
    L.DomEvent.disableClickPropagation(caja);
    L.DomEvent.disableScrollPropagation(caja);
    return caja;
  };
  control.addTo(mapa);
  return control;
}

function muestra(clase, estilo) {
  const m = el("span", "muestra " + clase);
  if (estilo) m.style.cssText = estilo;
  return m;
}

/**
 * Read-only introspection for automation (the browser test): the drawn map, and where a
 * point is drawn in this document's viewport pixels. Set once the map is drawn.
 */
function exponerMapa(mapa) {
  window.flotaVista = {
    mapa,
    /** On the world copy nearest the map's centre, where the views draw every point. */
    proyectar(lat, lon) {
      const centro = mapa.getCenter().lng;
      const p = mapa.latLngToContainerPoint([lat, lon - 360 * Math.round((lon - centro) / 360)]);
      const caja = mapa.getContainer().getBoundingClientRect();
      return [caja.left + p.x, caja.top + p.y];
    },
  };
}

/** Starts a view: bridge, evidence panel, host context, then hands results to `mostrar`. */
function arrancarVista(appInfo, mostrar, alCambiarTamano) {
  Evidencia.iniciar();
  if (window.parent === window) {
    mostrarEstado("Esta vista se abre dentro de un cliente MCP compatible con MCP Apps.");
    return null;
  }
  const puente = new Puente(appInfo);
  puente.en("ui/notifications/tool-input", (p) => {
    puente.argumentos = p.arguments || {};
    mostrarEstado("Consultando…");
  });
  puente.en("ui/notifications/tool-input-partial", () => {});
  puente.en("ui/notifications/tool-result", (resultado) => {
    try {
      mostrar(puente, resultado);
    } catch (e) {
      mostrarEstado("No se pudo dibujar el resultado: " + (e && e.message));
    }
  });
  puente.en("ui/notifications/tool-cancelled", (p) => {
    mostrarEstado("La consulta se canceló" + (p.reason ? ": " + p.reason : "."));
  });
  puente.en("ui/notifications/host-context-changed", (cambios) => aplicarContexto(puente, cambios, alCambiarTamano));
  puente.en("ui/resource-teardown", () => ({}));
  puente
    .iniciar()
    .then((r) => aplicarContexto(puente, r.hostContext, alCambiarTamano))
    .catch((e) => mostrarEstado("No se pudo conectar con el cliente: " + e.message));
  window.addEventListener("resize", () => {
    if (alCambiarTamano) alCambiarTamano();
    informarTamano(puente);
  });
  return puente;
}
