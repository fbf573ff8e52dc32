/* flota: the fleet view (ui://flota/flota), drawn from mapa_flota's structuredContent.
 *
 * Every active unit's last position, coloured by its state (moving, stopped with the engine
 * on, switched off, no signal) and labelled with its plate and the minutes in that state, over
 * the fleet's own routes and fences (or configured tiles). A few units at one place are
 * fanned out; more that would overlap are one cluster marker with their count (a click zooms
 * in). A click on a unit shows all its fields. Contract: docs/mapas.md, "mapa_flota".
 */
"use strict";

/** The four states of posicion_actual, in the order an operator acts on them. */
const ESTADOS = [
  { estado: "en movimiento", clase: "en-movimiento", clave: "en_movimiento", color: "#1a9641" },
  { estado: "detenida con motor encendido", clase: "motor-encendido", clave: "motor_encendido", color: "#f0a30a" },
  { estado: "apagada", clase: "apagada", clave: "apagada", color: "#6b6b6b" },
  { estado: "sin señal", clase: "sin-senal", clave: "sin_senal", color: "#d7191c" },
];
const ESTADO_DESCONOCIDO = { estado: "desconocido", clase: "desconocido", clave: "desconocido", color: "#999999" };

let vistaFlota = null;

function estadoDe(unidad) {
  return ESTADOS.find((e) => e.estado === unidad.estado) || ESTADO_DESCONOCIDO;
}

function minutosTexto(m) {
  if (typeof m !== "number" || !isFinite(m)) return "";
  if (m < 90) return numero(m, 0) + " min";
  return numero(Math.floor(m / 60), 0) + " h " + numero(Math.round(m % 60), 0) + " min";
}

function mostrarFlota(puente, resultado) {
  if (vistaFlota) {
    vistaFlota.mapa.remove();
    vistaFlota = null;
  }
  Evidencia.cerrar();
  mostrarAviso("");
  if (!resultado || resultado.isError) {
    mostrarEstado(textoDelResultado(resultado) || "La herramienta devolvió un error.");
    return;
  }
  const sc = resultado.structuredContent;
  if (!sc || !Array.isArray(sc.unidades)) {
    mostrarEstado(textoDelResultado(resultado) || "El resultado no trae unidades para el mapa.");
    return;
  }
  const total = typeof sc.total === "number" ? sc.total : sc.unidades.length;
  document.getElementById("titulo").textContent = "Flota · " + total + (total === 1 ? " unidad activa" : " unidades activas");
  document.getElementById("subtitulo").textContent = [
    sc.instante_consulta ? "Consulta " + String(sc.instante_consulta).replace("T", " ").slice(0, 16) : "",
    sc.zona_horaria ? "hora de " + sc.zona_horaria : "",
  ]
    .filter(Boolean)
    .join(" · ");
  mostrarAviso(sc.aviso);
  const conPosicion = sc.unidades.filter((u) => typeof u.lat === "number" && typeof u.lon === "number");
  if (conPosicion.length === 0) {
    mostrarEstado("Ninguna unidad activa tiene posición.");
    return;
  }
  mostrarEstado("");
  vistaFlota = dibujarFlota(sc, conPosicion);
}

function dibujarFlota(sc, unidades) {
  const base = (sc.vista && typeof sc.vista === "object" && sc.vista.version === 1 && sc.vista) || {};
  const mapa = crearMapa(base.teselas);
  // Each unit drawn on the world copy nearest the fleet's middle (a fleet across ±180° in one
  // piece); `u` itself, shown in the evidence, keeps its longitude.
  const cerca = mundoCercano(unidades.map((u) => u.lon));
  dibujarMapaBase(mapa, mapaBaseCercano(base, cerca), (g) => {
    const campos = { tipo: g.tipo };
    if (g.limite_kmh !== null && g.limite_kmh !== undefined) campos.limite_kmh = g.limite_kmh;
    Evidencia.mostrar("Geocerca " + g.nombre, campos);
  });
  const limites = L.latLngBounds([]);
  const marcadores = [];
  for (const u of unidades) {
    const e = estadoDe(u);
    const nodo = el("div", "unidad estado-" + e.clase);
    nodo.dataset.placa = u.placa;
    nodo.dataset.estado = e.estado;
    nodo.title = u.placa + ": " + e.estado + (typeof u.minutos_en_estado === "number" ? " desde hace " + minutosTexto(u.minutos_en_estado) : "");
    const borde = e.clase === "sin-senal" ? "2px dashed #ffffff" : "2px solid #ffffff";
    nodo.innerHTML =
      '<span class="punto" style="position:absolute;left:0;top:0;width:18px;height:18px;box-sizing:border-box;border-radius:50%;background:' + e.color + ";border:" + borde + ';box-shadow:0 0 0 1px #1a1a1a"></span>' +
      '<span class="rotulo" style="position:absolute;left:22px;top:0;white-space:nowrap;font-size:11px;line-height:18px;padding:0 4px;border-radius:3px;background:rgba(255,255,255,.88);color:#1a1a1a;border-left:3px solid ' + e.color + '">' +
      escaparHtml(u.placa) + (typeof u.minutos_en_estado === "number" ? " · " + escaparHtml(minutosTexto(u.minutos_en_estado)) : "") +
      "</span>";
    const lugar = [u.lat, cerca(u.lon)];
    const marcador = marcadorDom(lugar, nodo, [18, 18], { title: nodo.title, zIndexOffset: e.clase === "en-movimiento" ? 0 : 200 });
    const seleccionar = () => Evidencia.mostrar(u.placa + " · " + e.estado, u);
    marcador.on("click", seleccionar);
    marcador.addTo(mapa);
    marcadores.push({ marcador, u, lugar });
    limites.extend(lugar);
  }
  const filas = ESTADOS.map((e) => {
    const n = sc.por_estado && typeof sc.por_estado[e.clave] === "number" ? sc.por_estado[e.clave] : unidades.filter((u) => u.estado === e.estado).length;
    const borde = e.clase === "sin-senal" ? "2px dashed #fff" : "2px solid #fff";
    return [muestra("circulo", "background:" + e.color + ";border:" + borde + ";box-shadow:0 0 0 1px #1a1a1a"), e.estado + " (" + n + ")"];
  });
  filas.push([muestra("area"), "geocerca"]);
  leyenda(mapa, "Estados", filas);
  if (unidades.length === 1) mapa.setView(limites.getCenter(), 15);
  // Room at the bottom for the legend, so no unit sits under it.
  else mapa.fitBounds(limites, { paddingTopLeft: [48, 48], paddingBottomRight: [48, 140], maxZoom: 16 });
  const capaGrupos = L.layerGroup().addTo(mapa);
  abanico(mapa, marcadores, capaGrupos);
  mapa.on("zoomend", () => abanico(mapa, marcadores, capaGrupos));
  exponerMapa(mapa);
  return { mapa };
}

/** Least distance between two units' dots, px: closer ones are fanned out or clustered. */
const SEPARACION = 24;
/** Largest group fanned out; a bigger one is one cluster marker (as the PNG, src/map/units.rs). */
const MAX_ABANICO = 12;

/** Neighbours on a circle of radius r are 2 r sin(π / n) apart. */
function radioAbanico(n) {
  return SEPARACION / (2 * Math.sin(Math.PI / n));
}

/** A cluster's disc, px: wide enough for its count. */
function radioGrupo(n) {
  return 14 + 2 * (String(n).length - 1);
}

/** The room a group of n takes around its middle, half a separation of clearance included. */
function huella(n) {
  const m = SEPARACION / 2;
  if (n <= 1) return m;
  return (n <= MAX_ABANICO ? radioAbanico(n) : radioGrupo(n)) + m;
}

/** Where the k-th of n fanned dots goes around (x, y): clockwise from the top. */
function lugarAbanico(x, y, k, n) {
  const angulo = -Math.PI / 2 + (2 * Math.PI * k) / n;
  const r = radioAbanico(n);
  return [x + r * Math.cos(angulo), y + r * Math.sin(angulo)];
}

/** The discs a group is drawn as, each [x, y, radius with half a separation of clearance]. */
function discos(g) {
  const n = g.miembros.length;
  const m = SEPARACION / 2;
  if (n <= 1) return [[g.x, g.y, m]];
  if (n <= MAX_ABANICO) return g.miembros.map((_, k) => [...lugarAbanico(g.x, g.y, k, n), m]);
  return [[g.x, g.y, radioGrupo(n) + m]];
}

function seSolapan(a, b) {
  if (Math.hypot(a.x - b.x, a.y - b.y) >= huella(a.miembros.length) + huella(b.miembros.length)) return false;
  const otros = discos(b);
  return discos(a).some(([x, y, r]) => otros.some(([u, v, s]) => Math.hypot(x - u, y - v) < r + s));
}

/**
 * The PNG's rule (src/map/units.rs) at the current zoom: units closer than SEPARACION to a
 * group's first unit join it, then groups whose dots would overlap merge until none do. A
 * group of up to MAX_ABANICO is fanned around its middle; a bigger one is a cluster.
 */
function agrupar(puntos) {
  const grupos = [];
  puntos.forEach((p, i) => {
    let mejor = null;
    let dMejor = SEPARACION;
    for (const g of grupos) {
      const semilla = puntos[g.miembros[0]];
      const d = Math.hypot(p.x - semilla.x, p.y - semilla.y);
      if (d < dMejor) {
        mejor = g;
        dMejor = d;
      }
    }
    if (mejor) {
      mejor.miembros.push(i);
      mejor.sx += p.x;
      mejor.sy += p.y;
    } else grupos.push({ miembros: [i], sx: p.x, sy: p.y });
  });
  const centrar = (g) => {
    g.x = g.sx / g.miembros.length;
    g.y = g.sy / g.miembros.length;
  };
  grupos.forEach(centrar);
  for (let unido = true; unido; ) {
    unido = false;
    for (let a = 0; a < grupos.length; a++) {
      for (let b = a + 1; b < grupos.length; ) {
        if (seSolapan(grupos[a], grupos[b])) {
          const [otro] = grupos.splice(b, 1);
          const g = grupos[a];
          g.miembros = g.miembros.concat(otro.miembros).sort((x, y) => x - y);
          g.sx += otro.sx;
          g.sy += otro.sy;
          centrar(g);
          unido = true;
          b = a + 1;
        } else b++;
      }
    }
  }
  return grupos;
}

/** A cluster's marker: its count on white, in a ring split by its units' state colours. */
function marcadorGrupo(mapa, marcadores, miembros) {
  const unidades = miembros.map((i) => marcadores[i].u);
  const lugares = miembros.map((i) => marcadores[i].lugar);
  const n = unidades.length;
  const cuentas = ESTADOS.concat([ESTADO_DESCONOCIDO])
    .map((e) => [e, unidades.filter((u) => estadoDe(u) === e).length])
    .filter(([, c]) => c > 0);
  let desde = 0;
  const tramos = cuentas.map(([e, c]) => {
    const hasta = desde + (100 * c) / n;
    const tramo = e.color + " " + desde.toFixed(2) + "% " + hasta.toFixed(2) + "%";
    desde = hasta;
    return tramo;
  });
  const r = radioGrupo(n);
  const nodo = el("div", "grupo-unidades");
  nodo.dataset.unidades = String(n);
  nodo.dataset.placas = unidades.map((u) => u.placa).join(" ");
  nodo.title = n + " unidades: " + cuentas.map(([e, c]) => c + " " + e.estado).join(", ");
  nodo.innerHTML =
    '<span class="anillo" style="position:absolute;left:0;top:0;width:' + 2 * r + "px;height:" + 2 * r + "px;box-sizing:border-box;border-radius:50%;background:conic-gradient(" + tramos.join(", ") + ');box-shadow:0 0 0 1.5px #1a1a1a"></span>' +
    '<span class="cuenta" style="position:absolute;left:4px;top:4px;width:' + (2 * r - 8) + "px;height:" + (2 * r - 8) + "px;border-radius:50%;background:#ffffff;color:#1a1a1a;font:bold 11px/" + (2 * r - 8) + 'px sans-serif;text-align:center">' + n + "</span>";
  // The middle of their positions, as the PNG's cluster (near enough the mean of their pixels).
  const centro = [lugares.reduce((a, p) => a + p[0], 0) / n, lugares.reduce((a, p) => a + p[1], 0) / n];
  const marcador = marcadorDom(centro, nodo, [2 * r, 2 * r], { title: nodo.title, zIndexOffset: 400 });
  marcador.on("click", () => {
    // Closer in, the cluster opens; at the closest zoom its units are listed.
    if (mapa.getZoom() < mapa.getMaxZoom()) mapa.fitBounds(L.latLngBounds(lugares), { padding: [48, 48] });
    else {
      const campos = {};
      for (const [e, c] of cuentas) campos[e.estado] = c;
      campos.placas = unidades.map((u) => u.placa).join(", ");
      Evidencia.mostrar(n + " unidades", campos);
    }
  });
  return marcador;
}

/**
 * Units at one place (a depot) would hide each other: at the current zoom, each group of up
 * to MAX_ABANICO is spread on a circle around its middle (neighbours SEPARACION apart) by
 * shifting the markers' icons, the position itself staying true; a bigger group hides its
 * units' markers behind one cluster marker. Recomputed on every zoom.
 */
function abanico(mapa, marcadores, capaGrupos) {
  capaGrupos.clearLayers();
  const puntos = marcadores.map(({ lugar }) => mapa.latLngToLayerPoint(lugar));
  for (const g of agrupar(puntos)) {
    const n = g.miembros.length;
    const agrupado = n > MAX_ABANICO;
    if (agrupado) marcadorGrupo(mapa, marcadores, g.miembros).addTo(capaGrupos);
    g.miembros.forEach((i, k) => {
      const nodo = marcadores[i].marcador.getElement();
      if (!nodo) return;
      nodo.style.display = agrupado ? "none" : "";
      const [x, y] = n > 1 && !agrupado ? lugarAbanico(g.x, g.y, k, n) : [puntos[i].x, puntos[i].y];
      nodo.style.marginLeft = -9 + x - puntos[i].x + "px";
      nodo.style.marginTop = -9 + y - puntos[i].y + "px";
      nodo.dataset.abanico = n > 1 && !agrupado ? String(n) : "";
      nodo.dataset.grupo = agrupado ? String(n) : "";
    });
  }
}

arrancarVista({ name: "flota-flota", version: "1" }, mostrarFlota, () => {
  if (vistaFlota) vistaFlota.mapa.invalidateSize();
});
