/* flota: the day view (ui://flota/recorrido), drawn from mapa_recorrido's structuredContent.
 *
 * The track coloured by speed band, speeding episodes, stops (long ones dark), signal losses,
 * fences with their names, start and end, over the fleet's own routes (or configured tiles);
 * a time slider that replays the day; a click on an event shows its evidence; day navigation
 * through the host's tools/call when the host offers server tools. Contract: docs/mapas.md.
 */
"use strict";

const NOMBRE_TIPO = {
  parada: "Parada",
  exceso_velocidad: "Exceso de velocidad",
  perdida_senal: "Pérdida de señal",
  visita_geocerca: "Visita a geocerca",
};
const COLOR = {
  borde: "#ffffff",
  excesoBorde: "#400000",
  perdida: "#555555",
  inicio: "#00a650",
  fin: "#1a1a1a",
  parada: "#ffffff",
  paradaProlongada: "#67001f",
};
const SEGUNDOS_DE_REPRODUCCION = 60;

let vista = null;

function limpiarVista() {
  if (vista) {
    vista.detener();
    vista.mapa.remove();
    vista = null;
    window.flotaVista = undefined;
  }
  Evidencia.cerrar();
  const pie = document.getElementById("pie");
  pie.replaceChildren();
  pie.hidden = true;
  mostrarAviso("");
}

function resumen(sc) {
  const partes = [];
  if (sc.kilometros !== undefined) partes.push(numero(sc.kilometros) + " km");
  if (sc.paradas !== undefined) partes.push(cuenta(sc.paradas, "parada", "paradas"));
  if (sc.excesos_de_velocidad !== undefined) partes.push(cuenta(sc.excesos_de_velocidad, "exceso de velocidad", "excesos de velocidad"));
  if (sc.perdidas_de_senal !== undefined) partes.push(cuenta(sc.perdidas_de_senal, "pérdida de señal", "pérdidas de señal"));
  return partes.join(" · ");
}

function mostrarRecorrido(puente, resultado) {
  limpiarVista();
  if (!resultado || resultado.isError) {
    mostrarEstado(textoDelResultado(resultado) || "La herramienta devolvió un error.");
    return;
  }
  const sc = resultado.structuredContent;
  if (!sc || typeof sc !== "object") {
    mostrarEstado(textoDelResultado(resultado) || "El resultado no trae datos para el mapa.");
    return;
  }
  document.getElementById("titulo").textContent = [sc.placa, [sc.dia_semana, sc.fecha].filter(Boolean).join(" ")]
    .filter(Boolean)
    .join(" · ");
  document.getElementById("subtitulo").textContent = [sc.conductor, resumen(sc)].filter(Boolean).join(" · ");
  navegacion(puente, sc);
  const v = sc.vista;
  if (!v || v.version !== 1 || !Array.isArray(v.reportes) || v.reportes.length === 0) {
    mostrarEstado("Este resultado no trae la geometría del recorrido (campo «vista»); el cliente muestra la imagen del mapa. " + resumen(sc));
    return;
  }
  mostrarEstado("");
  mostrarAviso(sc.aviso);
  vista = dibujar(v);
}

/** Previous and next day through the host, when it lets the view call server tools. */
function navegacion(puente, sc) {
  const nav = document.getElementById("navegacion");
  nav.replaceChildren();
  nav.hidden = true;
  if (!puente || !puente.puedeLlamarHerramientas() || !sc.placa || !/^\d{4}-\d{2}-\d{2}$/.test(sc.fecha || "")) return;
  const otroDia = (dias) => {
    const d = new Date(sc.fecha + "T00:00:00Z");
    d.setUTCDate(d.getUTCDate() + dias);
    return d.toISOString().slice(0, 10);
  };
  const boton = (texto, etiqueta, fecha) => {
    const b = el("button", null, texto);
    b.type = "button";
    b.title = etiqueta + " (" + fecha + ")";
    b.setAttribute("aria-label", b.title);
    b.dataset.fecha = fecha;
    b.addEventListener("click", () => {
      for (const otro of nav.querySelectorAll("button")) otro.disabled = true;
      mostrarEstado("Consultando el recorrido del " + fecha + "…");
      puente
        .llamarHerramienta("mapa_recorrido", { placa: sc.placa, fecha })
        .then((r) => mostrarRecorrido(puente, r))
        .catch((e) => {
          mostrarEstado(e.message);
          for (const otro of nav.querySelectorAll("button")) otro.disabled = false;
        });
    });
    return b;
  };
  nav.append(boton("◀", "Día anterior", otroDia(-1)), boton("▶", "Día siguiente", otroDia(1)));
  nav.hidden = false;
}

function dibujar(original) {
  const v = vistaCercana(original);
  const mapa = crearMapa(v.teselas);
  const hora = formateadorHora(v.zona_horaria, v.desfase_utc_s);
  const pts = v.reportes;
  const cortes = new Set(v.cortes || []);
  const t0 = v.inicio_utc;
  const ll = (p) => [p[1], p[2]];
  const eventos = Array.isArray(v.eventos) ? v.eventos : [];
  dibujarMapaBase(mapa, v, (g) => mostrarGeocerca(g, eventos));

  // Track: a white casing per unbroken stretch, then runs of one band each. A segment takes
  // its faster end's band, so a speeding report is never hidden.
  const colores = (v.bandas || []).map((b) => b.color);
  let tramo = [ll(pts[0])];
  const tramos = [];
  for (let i = 1; i < pts.length; i++) {
    if (cortes.has(i)) {
      tramos.push(tramo);
      tramo = [];
    }
    tramo.push(ll(pts[i]));
  }
  tramos.push(tramo);
  for (const t of tramos) {
    if (t.length > 1) L.polyline(t, { color: COLOR.borde, weight: 7, opacity: 1, interactive: false, className: "trazo-borde" }).addTo(mapa);
  }
  let corrida = null;
  let bandaCorrida = -1;
  const cerrar = () => {
    if (corrida && corrida.length > 1) {
      const color = colores[bandaCorrida] || "#2b83ba";
      L.polyline(corrida, { color, weight: 4, opacity: 1, interactive: false, className: "trazo banda-" + bandaCorrida }).addTo(mapa);
    }
    corrida = null;
    bandaCorrida = -1;
  };
  for (let i = 1; i < pts.length; i++) {
    if (cortes.has(i)) {
      cerrar();
      continue;
    }
    const banda = Math.max(pts[i - 1][5], pts[i][5]);
    if (banda !== bandaCorrida) {
      cerrar();
      corrida = [ll(pts[i - 1])];
      bandaCorrida = banda;
    }
    corrida.push(ll(pts[i]));
  }
  cerrar();

  const seleccionar = (e) => {
    Evidencia.mostrar(e.titulo, Object.assign({ tipo: NOMBRE_TIPO[e.tipo] || e.tipo }, e.evidencia || {}));
    reproduccion.irA(e.inicio_utc - t0);
  };
  const colorExceso = colores[colores.length - 1] || "#d7191c";
  eventos.forEach((e, indice) => {
    if (e.tipo === "exceso_velocidad") {
      const fin = e.fin_utc === null || e.fin_utc === undefined ? Infinity : e.fin_utc;
      const tramoExceso = pts.filter((p) => t0 + p[0] >= e.inicio_utc && t0 + p[0] <= fin).map(ll);
      if (tramoExceso.length > 1) {
        L.polyline(tramoExceso, { color: COLOR.excesoBorde, weight: 9, opacity: 1, interactive: false }).addTo(mapa);
        L.polyline(tramoExceso, { color: colorExceso, weight: 5, opacity: 1, interactive: false, className: "trazo-exceso" }).addTo(mapa);
      }
    } else if (e.tipo === "perdida_senal" && Array.isArray(e.hasta)) {
      L.polyline([[e.lat, e.lon], e.hasta], { color: COLOR.perdida, weight: 3, dashArray: "6 6", opacity: 1, interactive: false }).addTo(mapa);
    }
    const marcador = marcadorDeEvento(e, indice, colorExceso);
    if (marcador) {
      marcador.on("click", () => seleccionar(e));
      marcador.addTo(mapa);
    }
  });

  // Start and end (or the last position while the day goes on).
  const primero = pts[0];
  const ultimo = pts[pts.length - 1];
  const nodoInicio = el("div", "inicio");
  nodoInicio.title = "Inicio " + hora(t0 + primero[0]);
  nodoInicio.innerHTML = '<svg width="18" height="16" viewBox="0 0 18 16"><path d="M9 1 L17 15 L1 15 Z" fill="' + COLOR.inicio + '" stroke="#fff" stroke-width="1.5"/></svg>';
  marcadorDom(ll(primero), nodoInicio, [18, 16], { title: nodoInicio.title }).addTo(mapa);
  const nodoFin = el("div", "fin");
  nodoFin.title = (v.en_curso ? "Última posición " : "Fin ") + hora(t0 + ultimo[0]);
  nodoFin.innerHTML = '<svg width="14" height="14" viewBox="0 0 14 14"><rect x="1" y="1" width="12" height="12" fill="' + COLOR.fin + '" stroke="#fff" stroke-width="1.5"/></svg>';
  marcadorDom(ll(ultimo), nodoFin, [14, 14], { title: nodoFin.title }).addTo(mapa);

  // The legend after the player, which takes its height from the map: the legend opens
  // only where the map leaves it room.
  const reproduccion = reproductor(mapa, v, hora, cortes);
  leyendaRecorrido(mapa, v, colorExceso);

  const limites = L.latLngBounds(pts.map(ll));
  for (const e of eventos) if (e.tipo === "parada") limites.extend([e.lat, e.lon]);
  mapa.fitBounds(limites, { padding: [28, 28] });
  reproduccion.irA(0);

  exponerMapa(mapa);
  return { mapa, detener: () => reproduccion.detener() };
}

/** The day with every longitude on one world copy (a day across ±180° drawn in one piece). */
function vistaCercana(v) {
  const eventos = Array.isArray(v.eventos) ? v.eventos : [];
  const cerca = mundoCercano(v.reportes.map((p) => p[2]).concat(eventos.map((e) => e.lon)));
  return Object.assign(mapaBaseCercano(v, cerca), {
    reportes: v.reportes.map((p) => [p[0], p[1], cerca(p[2]), p[3], p[4], p[5]]),
    eventos: eventos.map((e) => Object.assign({}, e, { lon: cerca(e.lon), hasta: Array.isArray(e.hasta) ? [e.hasta[0], cerca(e.hasta[1])] : e.hasta })),
  });
}

function marcadorDeEvento(e, indice, colorExceso) {
  const nodo = el("div", "evento evento-" + e.tipo);
  nodo.dataset.tipo = e.tipo;
  nodo.dataset.indice = String(indice);
  nodo.title = e.titulo || NOMBRE_TIPO[e.tipo] || e.tipo;
  if (e.tipo === "parada") {
    const radio = Math.min(4 + 1.4 * Math.sqrt(Math.max(0, e.minutos || 0)), 20);
    const lado = Math.round(radio * 2);
    if (e.prolongada) nodo.className += " prolongada";
    nodo.style.cssText = "border-radius:50%;box-sizing:border-box;border:2px solid #1a1a1a;background:" + (e.prolongada ? COLOR.paradaProlongada : COLOR.parada) + ";opacity:.92";
    return marcadorDom([e.lat, e.lon], nodo, [lado, lado], { title: nodo.title });
  }
  if (e.tipo === "exceso_velocidad") {
    const maxima = e.evidencia && e.evidencia.velocidad_max_kmh;
    nodo.innerHTML = '<span class="rotulo-exceso">' + escaparHtml(maxima !== undefined ? numero(maxima, 0) + " km/h" : "exceso") + "</span>";
    nodo.style.cssText = "display:flex;align-items:center;justify-content:center;background:" + colorExceso + ";color:#fff;font-weight:700;font-size:11px;border:2px solid " + COLOR.excesoBorde + ";border-radius:9px;white-space:nowrap";
    return marcadorDom([e.lat, e.lon], nodo, [62, 18], { title: nodo.title, zIndexOffset: 500 });
  }
  if (e.tipo === "perdida_senal") {
    nodo.innerHTML = '<svg width="16" height="16" viewBox="0 0 16 16"><circle cx="8" cy="8" r="7" fill="#fff" stroke="' + COLOR.perdida + '" stroke-width="2" stroke-dasharray="3 2"/><path d="M4 12 L12 4" stroke="' + COLOR.perdida + '" stroke-width="2"/></svg>';
    return marcadorDom([e.lat, e.lon], nodo, [16, 16], { title: nodo.title, zIndexOffset: 300 });
  }
  // Geofence visits are shown on their fence (a click on it lists them).
  return null;
}

function mostrarGeocerca(g, eventos) {
  const visitas = eventos.filter((e) => e.tipo === "visita_geocerca" && e.geocerca === g.nombre).map((e) => e.evidencia || {});
  const campos = { tipo: g.tipo };
  if (g.limite_kmh !== null && g.limite_kmh !== undefined) campos.limite_kmh = g.limite_kmh;
  campos.visitas_del_dia = visitas.length ? visitas : "ninguna";
  Evidencia.mostrar("Geocerca " + g.nombre, campos);
}

function leyendaRecorrido(mapa, v, colorExceso) {
  const filas = [];
  const bandas = v.bandas || [];
  // Bands are shares of the limit that applied at each point (a fence may have its own);
  // km/h are spelled out for the unit's general limit.
  bandas.forEach((b, i) => {
    const fraccion = b.hasta_fraccion_limite;
    const texto = fraccion === null || fraccion === undefined
      ? "sobre el límite (más de " + numero(v.limite_kmh, 0) + " km/h fuera de geocercas con límite propio)"
      : fraccion >= 1
        ? "hasta el límite (" + numero(b.hasta_kmh, 0) + " km/h)"
        : "hasta " + numero(fraccion * 100, 0) + " % del límite (" + numero(b.hasta_kmh, 0) + " km/h)";
    filas.push([muestra("linea", "background:" + b.color), texto]);
  });
  filas.push([muestra("linea", "height:6px;background:" + colorExceso + ";border:1px solid " + COLOR.excesoBorde), "exceso detectado, con su máxima"]);
  filas.push([muestra("circulo"), "parada (tamaño según duración)"]);
  filas.push([muestra("circulo", "background:" + COLOR.paradaProlongada), "parada prolongada"]);
  filas.push([muestra("discontinua"), "sin señal"]);
  filas.push([muestra("area"), "geocerca"]);
  filas.push([muestra("", "width:0;height:0;border-left:7px solid transparent;border-right:7px solid transparent;border-bottom:12px solid " + COLOR.inicio), "inicio"]);
  filas.push([muestra("", "width:11px;height:11px;background:" + COLOR.fin), v.en_curso ? "última posición (el día sigue)" : "fin"]);
  leyenda(mapa, "Leyenda", filas);
}

/** The time slider, the play button and the marker that replays the day. */
function reproductor(mapa, v, hora, cortes) {
  const pts = v.reportes;
  const t0 = v.inicio_utc;
  const tMax = pts[pts.length - 1][0];
  const pie = document.getElementById("pie");
  const fila = el("div", "reproduccion");
  const boton = el("button", null, "▶");
  boton.type = "button";
  boton.id = "reproducir";
  boton.setAttribute("aria-label", "Reproducir el día");
  const deslizador = el("input");
  deslizador.type = "range";
  deslizador.id = "deslizador";
  deslizador.min = "0";
  deslizador.max = String(tMax);
  deslizador.step = "1";
  deslizador.value = "0";
  deslizador.setAttribute("aria-label", "Hora del recorrido");
  const lectura = el("span", "lectura");
  const reloj = el("b", null, "");
  reloj.id = "reloj";
  const velocidad = el("span", null, "");
  velocidad.id = "velocidad";
  const estado = el("span", null, "");
  estado.id = "estado-unidad";
  lectura.append(reloj, " · ", velocidad, " · ", estado);
  fila.append(boton, deslizador, lectura);
  pie.appendChild(fila);
  pie.hidden = false;
  mapa.invalidateSize();

  const nodo = el("div", "marcador-reproduccion");
  nodo.innerHTML = '<svg width="20" height="20" viewBox="0 0 20 20"><circle cx="10" cy="10" r="8" fill="#ffffff" stroke="#1a1a1a" stroke-width="3"/><circle cx="10" cy="10" r="3" fill="#1a1a1a"/></svg>';
  const marcador = marcadorDom([pts[0][1], pts[0][2]], nodo, [20, 20], { zIndexOffset: 1000, keyboard: false, interactive: false }).addTo(mapa);

  /** Index of the last report at or before `t`. */
  const indiceEn = (t) => {
    let bajo = 0;
    let alto = pts.length - 1;
    while (bajo < alto) {
      const medio = (bajo + alto + 1) >> 1;
      if (pts[medio][0] <= t) bajo = medio;
      else alto = medio - 1;
    }
    return bajo;
  };
  const mostrar = (t) => {
    const i = indiceEn(t);
    const a = pts[i];
    const b = pts[i + 1];
    let lat = a[1];
    let lon = a[2];
    const sinSenal = Boolean(b) && cortes.has(i + 1) && t > a[0];
    if (b && !sinSenal && b[0] > a[0]) {
      const f = Math.min(1, Math.max(0, (t - a[0]) / (b[0] - a[0])));
      lat += (b[1] - a[1]) * f;
      lon += (b[2] - a[2]) * f;
    }
    marcador.setLatLng([lat, lon]);
    reloj.textContent = hora(t0 + t);
    velocidad.textContent = numero(a[3], 0) + " km/h";
    // The same four states as posicion_actual.
    estado.textContent = sinSenal ? "sin señal" : a[4] === 0 ? "apagada" : a[3] > 0 ? "en movimiento" : "detenida con motor encendido";
    nodo.dataset.indice = String(i);
  };

  let animacion = null;
  let t = 0;
  const detener = () => {
    if (animacion !== null) cancelAnimationFrame(animacion);
    animacion = null;
    boton.textContent = "▶";
    boton.setAttribute("aria-label", "Reproducir el día");
  };
  const irA = (nuevo) => {
    t = Math.min(tMax, Math.max(0, Number(nuevo) || 0));
    deslizador.value = String(t);
    mostrar(t);
  };
  deslizador.addEventListener("input", () => {
    detener();
    irA(deslizador.value);
  });
  boton.addEventListener("click", () => {
    if (animacion !== null) return detener();
    if (t >= tMax) irA(0);
    boton.textContent = "⏸";
    boton.setAttribute("aria-label", "Pausar");
    let antes = performance.now();
    const paso = (ahora) => {
      irA(t + ((ahora - antes) / 1000) * (Math.max(tMax, 1) / SEGUNDOS_DE_REPRODUCCION));
      antes = ahora;
      if (t >= tMax) detener();
      else animacion = requestAnimationFrame(paso);
    };
    animacion = requestAnimationFrame(paso);
  });
  return { irA, detener };
}

arrancarVista({ name: "flota-recorrido", version: "1" }, mostrarRecorrido, () => {
  if (vista) vista.mapa.invalidateSize();
});
