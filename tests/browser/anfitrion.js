// A minimal MCP Apps host for the browser test: the host side of io.modelcontextprotocol/ui
// (2026-01-26) over postMessage, as the extension describes it. It loads a view document into a
// sandboxed srcdoc frame under the extension's default CSP, answers ui/initialize, and only
// after ui/notifications/initialized sends tool-input and tool-result; it applies
// size-changed, forwards tools/call to the test (window.llamarHerramienta, exposed by
// Playwright) and records every message the view sends.
"use strict";

(() => {
  // The extension's default CSP for a resource that declares no domains.
  const CSP =
    "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; " +
    "img-src 'self' data:; media-src 'self' data:; connect-src 'none'; object-src 'none'";
  const marco = document.getElementById("marco");
  const registro = { mensajes: [], tamanos: [], herramientas: [], enviadoResultado: false };
  let sesion = null;

  const enviar = (mensaje) => marco.contentWindow.postMessage(mensaje, "*");
  const notificar = (method, params) => enviar({ jsonrpc: "2.0", method, params });
  const responder = (id, result) => enviar({ jsonrpc: "2.0", id, result });
  const fallar = (id, code, message) => enviar({ jsonrpc: "2.0", id, error: { code, message } });

  window.anfitrion = {
    registro,
    /** Loads a view; resolves once the tool result has been sent to it. */
    abrir(nombre, opciones) {
      registro.mensajes = [];
      registro.tamanos = [];
      registro.herramientas = [];
      registro.enviadoResultado = false;
      return fetch("/vistas/" + nombre + ".html")
        .then((r) => r.text())
        .then(
          (html) =>
            new Promise((resolver) => {
              sesion = { opciones, resolver };
              marco.srcdoc = html.replace(
                "<head>",
                '<head><meta http-equiv="Content-Security-Policy" content="' + CSP + '">'
              );
            })
        );
    },
    notificar,
  };

  window.addEventListener("message", (evento) => {
    if (evento.source !== marco.contentWindow || !sesion) return;
    const m = evento.data;
    registro.mensajes.push(m);
    if (!m || m.jsonrpc !== "2.0") return;
    const { opciones } = sesion;
    switch (m.method) {
      case "ui/initialize":
        responder(m.id, {
          protocolVersion: "2026-01-26",
          hostInfo: { name: "anfitrion-de-prueba", version: "1" },
          hostCapabilities: opciones.hostCapabilities || {},
          hostContext: opciones.hostContext || {},
        });
        break;
      case "ui/notifications/initialized":
        notificar("ui/notifications/tool-input", { arguments: opciones.toolInput || {} });
        notificar("ui/notifications/tool-result", opciones.toolResult);
        registro.enviadoResultado = true;
        sesion.resolver();
        break;
      case "ui/notifications/size-changed":
        registro.tamanos.push(m.params);
        marco.style.height = m.params.height + "px";
        break;
      case "tools/call":
        registro.herramientas.push(m.params);
        window
          .llamarHerramienta(m.params.name, m.params.arguments || {})
          .then((r) => responder(m.id, r))
          .catch((e) => fallar(m.id, -32603, String(e && e.message)));
        break;
      default:
        if (m.method && m.id !== undefined) fallar(m.id, -32601, "método no admitido: " + m.method);
    }
  });
})();
