/* flota: the fleet view (ui://flota/flota), drawn from mapa_flota's structuredContent.
 *
 * Every active unit's last position, coloured by its state (moving, stopped with the engine
 * on, switched off, no signal) and labelled with its plate and the minutes in that state, over
 * the fleet's own routes and fences (or configured tiles). A click on a unit shows all its
 * fields. Contract: docs/mapas.md, "mapa_flota".
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
  dibujarMapaBase(mapa, base, (g) => {
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
    const marcador = marcadorDom([u.lat, u.lon], nodo, [18, 18], { title: nodo.title, zIndexOffset: e.clase === "en-movimiento" ? 0 : 200 });
    const seleccionar = () => Evidencia.mostrar(u.placa + " · " + e.estado, u);
    marcador.on("click", seleccionar);
    marcador.addTo(mapa);
    marcadores.push({ marcador, u });
    limites.extend([u.lat, u.lon]);
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
  abanico(mapa, marcadores);
  mapa.on("zoomend", () => abanico(mapa, marcadores));
  exponerMapa(mapa);
  return { mapa };
}

/** Least distance between two units' dots, px: closer ones are fanned out. */
const SEPARACION = 24;

/**
 * Units at one place (a depot) would hide each other: at the current zoom, each group closer
 * than SEPARACION is spread on a circle around its middle (neighbours SEPARACION apart), by
 * shifting the markers' icons; the position itself stays true. Recomputed on every zoom.
 */
function abanico(mapa, marcadores) {
  const puntos = marcadores.map(({ u }) => mapa.latLngToLayerPoint([u.lat, u.lon]));
  const grupo = puntos.map((_, i) => i);
  for (let i = 0; i < puntos.length; i++) {
    for (let j = 0; j < i; j++) {
      if (puntos[i].distanceTo(puntos[j]) < SEPARACION) {
        grupo[i] = grupo[j];
        break;
      }
    }
  }
  puntos.forEach((p, lider) => {
    const miembros = grupo.map((g, i) => (g === lider ? i : -1)).filter((i) => i >= 0);
    const n = miembros.length;
    if (n === 0) return;
    const cx = miembros.reduce((a, i) => a + puntos[i].x, 0) / n;
    const cy = miembros.reduce((a, i) => a + puntos[i].y, 0) / n;
    const radio = n > 1 ? SEPARACION / (2 * Math.sin(Math.PI / n)) : 0;
    miembros.forEach((i, k) => {
      const angulo = -Math.PI / 2 + (2 * Math.PI * k) / n;
      const dx = n > 1 ? cx + radio * Math.cos(angulo) - puntos[i].x : 0;
      const dy = n > 1 ? cy + radio * Math.sin(angulo) - puntos[i].y : 0;
      const nodo = marcadores[i].marcador.getElement();
      if (!nodo) return;
      nodo.style.marginLeft = -9 + dx + "px";
      nodo.style.marginTop = -9 + dy + "px";
      nodo.dataset.abanico = n > 1 ? String(n) : "";
    });
  });
}

arrancarVista({ name: "flota-flota", version: "1" }, mostrarFlota, () => {
  if (vistaFlota) vistaFlota.mapa.invalidateSize();
});
