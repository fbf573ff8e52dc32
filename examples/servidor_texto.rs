//! The course's minimal MCP server, rebuilt on flota's protocol core.
//!
//! Four tools over stdio: `analizar_texto`, `calcular_estadisticas`, `informacion_sistema`
//! (the course server's original three) and `esperar`, a slow tool that shows progress and
//! cancellation, and runs as a task for clients that declare the tasks extension. Each tool is a [`TypedTool`]: typed parameters, typed output, schemas derived
//! from the types. Try it: `cargo run --example servidor_texto < examples/requests.jsonl`, or
//! over HTTP with `--http 127.0.0.1:8770` (plus `--limite-llamada SEGUNDOS`). `--gracia
//! SEGUNDOS` sets how long calls still running at the end of the session may finish (the
//! tests give a short call a grace no slow machine approaches).
#![allow(clippy::print_stderr)]

use std::time::{Duration, Instant};

use flota::mcp::{
    self, CallContext, Reply, ServeOptions, ServerInfo, Service, TaskSettings, TaskSupport, Tasks,
    ToolError, TypedTool, typed,
};
use flota::plumbing::clock::Clock;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// --- analizar_texto -------------------------------------------------------------------------

struct AnalyzeText;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AnalyzeParams {
    #[schemars(description = "Texto a analizar")]
    texto: String,
}

#[derive(Serialize, JsonSchema)]
struct AnalyzeOutput {
    #[schemars(description = "Número de caracteres (puntos de código Unicode)")]
    caracteres: usize,
    palabras: usize,
    lineas: usize,
    mayusculas: String,
    minusculas: String,
}

impl TypedTool for AnalyzeText {
    type Params = AnalyzeParams;
    type Output = AnalyzeOutput;

    fn name(&self) -> &'static str {
        "analizar_texto"
    }
    fn title(&self) -> &'static str {
        "Analizar texto"
    }
    fn description(&self) -> String {
        "Cuenta caracteres, palabras y líneas de un texto y lo devuelve en mayúsculas y \
         minúsculas. Ejemplo: «¿cuántas palabras tiene este párrafo?»"
            .into()
    }

    fn call(&self, p: AnalyzeParams, _: &CallContext) -> Result<Reply<AnalyzeOutput>, ToolError> {
        Ok(Reply::new(AnalyzeOutput {
            caracteres: p.texto.chars().count(),
            palabras: p.texto.split_whitespace().count(),
            lineas: if p.texto.is_empty() {
                0
            } else {
                p.texto.lines().count()
            },
            mayusculas: p.texto.to_uppercase(),
            minusculas: p.texto.to_lowercase(),
        }))
    }
}

// --- calcular_estadisticas ------------------------------------------------------------------

struct Statistics;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct StatisticsParams {
    #[schemars(description = "Lista no vacía de números", length(min = 1))]
    numeros: Vec<f64>,
}

#[derive(Serialize, JsonSchema)]
struct StatisticsOutput {
    cantidad: usize,
    suma: f64,
    media: f64,
    minimo: f64,
    maximo: f64,
}

impl TypedTool for Statistics {
    type Params = StatisticsParams;
    type Output = StatisticsOutput;

    fn name(&self) -> &'static str {
        "calcular_estadisticas"
    }
    fn title(&self) -> &'static str {
        "Calcular estadísticas"
    }
    fn description(&self) -> String {
        "Cantidad, suma, media, mínimo y máximo de una lista de números. Ejemplo: «¿cuál es \
         el promedio de 4, 8 y 15?»"
            .into()
    }

    fn call(
        &self,
        p: StatisticsParams,
        _: &CallContext,
    ) -> Result<Reply<StatisticsOutput>, ToolError> {
        // The schema guarantees at least one number; keep the tool total anyway.
        let Some(first) = p.numeros.first().copied() else {
            return Err(ToolError::InvalidArguments(
                "el argumento 'numeros' no puede ser una lista vacía".into(),
            ));
        };
        let suma: f64 = p.numeros.iter().sum();
        Ok(Reply::new(StatisticsOutput {
            cantidad: p.numeros.len(),
            suma,
            media: suma / p.numeros.len() as f64,
            minimo: p.numeros.iter().copied().fold(first, f64::min),
            maximo: p.numeros.iter().copied().fold(first, f64::max),
        }))
    }
}

// --- informacion_sistema --------------------------------------------------------------------

struct SystemInfo;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoParams {}

#[derive(Serialize, JsonSchema)]
struct SystemOutput {
    sistema_operativo: String,
    plataforma: String,
    entorno: String,
    directorio_actual: String,
}

impl TypedTool for SystemInfo {
    type Params = NoParams;
    type Output = SystemOutput;

    fn name(&self) -> &'static str {
        "informacion_sistema"
    }
    fn title(&self) -> &'static str {
        "Información del sistema"
    }
    fn description(&self) -> String {
        "Sistema operativo, plataforma, versión del entorno de ejecución y directorio de \
         trabajo del servidor. No revela variables de entorno, credenciales ni archivos."
            .into()
    }

    fn call(&self, _: NoParams, _: &CallContext) -> Result<Reply<SystemOutput>, ToolError> {
        let cwd = std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_else(|_| "(desconocido)".into());
        Ok(Reply::new(SystemOutput {
            sistema_operativo: std::env::consts::OS.into(),
            plataforma: format!("{}-{}", std::env::consts::ARCH, std::env::consts::FAMILY),
            entorno: env!("FLOTA_RUSTC_VERSION").into(),
            directorio_actual: cwd,
        }))
    }
}

// --- esperar --------------------------------------------------------------------------------

struct Wait;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WaitParams {
    #[schemars(
        description = "Milisegundos a esperar (0 a 60000)",
        range(max = 60_000)
    )]
    milisegundos: u32,
}

#[derive(Serialize, JsonSchema)]
struct WaitOutput {
    milisegundos_esperados: u64,
}

impl TypedTool for Wait {
    type Params = WaitParams;
    type Output = WaitOutput;

    fn name(&self) -> &'static str {
        "esperar"
    }
    fn title(&self) -> &'static str {
        "Esperar"
    }
    fn description(&self) -> String {
        "Espera el tiempo pedido informando el progreso cada 50 ms; se puede cancelar. Sirve \
         para probar progreso, cancelación y respuestas fuera de orden."
            .into()
    }
    /// A long wait is what tasks are for: a client that declares the extension gets a task
    /// handle and polls it.
    fn task_support(&self) -> TaskSupport {
        TaskSupport::Optional
    }

    fn call(&self, p: WaitParams, ctx: &CallContext) -> Result<Reply<WaitOutput>, ToolError> {
        let total = Duration::from_millis(p.milisegundos.into());
        let started = Instant::now();
        while started.elapsed() < total {
            if ctx.is_cancelled() {
                return Err(ToolError::Failed("cancelada".into()));
            }
            let done = started.elapsed().as_millis() as f64;
            ctx.progress(done, Some(total.as_millis() as f64), Some("esperando"));
            std::thread::sleep(Duration::from_millis(50).min(total - started.elapsed().min(total)));
        }
        Ok(Reply::new(WaitOutput {
            milisegundos_esperados: started.elapsed().as_millis() as u64,
        }))
    }
}

fn main() {
    // FLOTA_LOG, as for flota itself.
    if let Some(level) = flota::settings::Settings::from_env().log_level {
        flota::plumbing::log::set_level(level);
    }
    let service = Service {
        info: ServerInfo {
            name: "servidor-texto".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            title: "Servidor de texto (ejemplo del curso)".into(),
        },
        instructions: Some(
            "Herramientas de ejemplo: analizar texto, estadísticas de números, información del \
             sistema y una espera con progreso."
                .into(),
        ),
        tools: vec![
            typed(AnalyzeText),
            typed(Statistics),
            typed(SystemInfo),
            typed(Wait),
        ],
        tasks: Some(Tasks::new(TaskSettings::new(Clock::system()))),
        ..Service::default()
    };
    let args: Vec<String> = std::env::args().collect();
    let value_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
    };
    let call_timeout = match value_of("--limite-llamada").map(|s| s.parse::<f64>()) {
        Some(Ok(seconds)) if seconds > 0.0 => Some(Duration::from_secs_f64(seconds)),
        Some(_) => None,
        None => ServeOptions::default().call_timeout,
    };
    let stop_grace = match value_of("--gracia").map(|s| s.parse::<f64>()) {
        Some(Ok(seconds)) if (0.0..=86_400.0).contains(&seconds) => {
            Duration::from_secs_f64(seconds)
        }
        _ => ServeOptions::default().stop_grace,
    };
    let options = ServeOptions {
        verbose: args.iter().any(|a| a == "--verbose"),
        call_timeout,
        stop_grace,
        ..ServeOptions::default()
    };
    // `--http 127.0.0.1:PUERTO`: the same service over Streamable HTTP, without a token (a
    // local example); the address actually bound is printed on stderr.
    let outcome = match value_of("--http") {
        Some(address) => std::net::TcpListener::bind(address).and_then(|listener| {
            eprintln!("escuchando en http://{}/mcp", listener.local_addr()?);
            let mut http = mcp::HttpOptions {
                serve: options,
                ..mcp::HttpOptions::default()
            };
            http.guard.hosts = vec!["127.0.0.1".into(), "localhost".into()];
            mcp::serve_http(service, listener, http)
        }),
        None => mcp::serve_stdio(service, std::io::stdin(), std::io::stdout(), options),
    };
    if let Err(err) = outcome {
        eprintln!("error: {err}");
        std::process::exit(1);
    }
}
