//! The `flota` binary: parse the command line, run one verb, map the outcome to an exit code.
//!
//! Thin on purpose. Each verb lives in its own module; this file only hands them the process's
//! stdin/stdout/stderr, which nothing else may grab. Exit codes: 0 ok, 1 failure, 2 bad usage.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use flota::cli::{self, ConfigVerb, Parsed, ProviderArgs, RoutesVerb, SimulateArgs, Verb};
use flota::client;
use flota::commands::{config as claude_config, serve as app};
use flota::scenario::{Ahora, Source};

fn main() -> ExitCode {
    flota::plumbing::log::init_from_env();
    match cli::parse(std::env::args_os()) {
        Parsed::Print(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Parsed::Fail(text) => {
            eprint!("{text}");
            ExitCode::from(2)
        }
        Parsed::Run(cli) => match run(cli.command) {
            Ok(code) => code,
            // Options that contradict each other are bad usage, like a parse error.
            Err(err) if err.is::<flota::commands::simulate::PathConflict>() => {
                eprintln!("error: {err:#}");
                ExitCode::from(2)
            }
            Err(err) => {
                eprintln!("error: {err:#}");
                ExitCode::FAILURE
            }
        },
    }
}

fn run(verb: Verb) -> anyhow::Result<ExitCode> {
    match verb {
        Verb::Simular(args) => {
            let summary = flota::commands::simulate::run(&simulate_options(&args))?;
            eprintln!("{}", summary.line());
        }
        Verb::Analizar(args) => {
            let summary = flota::commands::analyze::run(&args.db)?;
            eprintln!(
                "{} unidades, {} posiciones analizadas → {} eventos en {} ({:.2} s)",
                summary.vehicles,
                summary.fixes,
                summary.events,
                args.db.display(),
                summary.elapsed.as_secs_f64()
            );
        }
        Verb::Evaluar(args) => {
            let evaluation = flota::evaluation::run(&flota::evaluation::Options {
                truth: flota::evaluation::truth_path(&args.db, args.verdad.as_deref()),
                db: args.db,
                tolerance_s: args.tolerancia,
            })?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&evaluation)?);
            } else {
                print!("{}", evaluation.table());
            }
            if let Some(failure) = args.f1_minimo.and_then(|min| evaluation.gate(min)) {
                eprintln!("error: {failure}");
                return Ok(ExitCode::FAILURE);
            }
        }
        Verb::Servir(args) => {
            app::serve(&args, std::io::stdin(), std::io::stdout())?;
        }
        Verb::Exportar(args) => {
            let exported = flota::export::run(&flota::export::Options {
                db: app::db_path(args.db.as_deref()),
                placa: args.placa,
                fecha: args.fecha,
                format: args.formato,
                output: args.salida,
                ahora: app::ahora(args.ahora)?,
                tiles: flota::map::TileConfig::from_env(),
            })?;
            match &exported.path {
                Some(path) => eprintln!("{} → {}", exported.summary, path.display()),
                None => {
                    let mut out = std::io::stdout().lock();
                    out.write_all(&exported.bytes)?;
                    out.flush()?;
                    eprintln!("{}", exported.summary);
                }
            }
            if let Some(aviso) = &exported.aviso {
                eprintln!("aviso: {aviso}");
            }
        }
        Verb::Rutas(verb) => return routes(verb),
        Verb::Cliente(args) => {
            let color = std::io::stdout().is_terminal();
            let mut out = std::io::stdout().lock();
            let problems = client::run(&args, &mut out, &mut std::io::stdin().lock(), color)?;
            out.flush()?;
            if problems > 0 {
                eprintln!(
                    "error: {problems} problemas de protocolo en las respuestas del servidor"
                );
                return Ok(ExitCode::FAILURE);
            }
        }
        Verb::Config(ConfigVerb::Claude(args)) => {
            let exe = std::env::current_exe()?.canonicalize()?;
            let db = claude_config::absolute(&app::db_path(args.db.as_deref()));
            let entry = claude_config::entry(&exe, &db);
            println!("{}", serde_json::to_string_pretty(&entry)?);
            eprintln!("{}", claude_config::locations());
            if db.is_dir() {
                eprintln!(
                    "Aviso: {} es una carpeta, no una base de datos; indique el archivo, por \
                     ejemplo {}",
                    db.display(),
                    db.join("flota.db").display()
                );
            } else if !db.exists() {
                eprintln!(
                    "Aviso: {} todavía no existe; el servidor arrancará igual y cada herramienta \
                     dirá cómo generarla.",
                    db.display()
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `flota rutas`: progress and failures on stderr, tables and GeoJSON on stdout; exit 1 when
/// any route failed.
fn routes(verb: RoutesVerb) -> anyhow::Result<ExitCode> {
    use flota::commands::routes as rc;
    let failed = match verb {
        RoutesVerb::Regenerar(args) => {
            let connection = connection(&args.proveedor)?;
            eprintln!(
                "Regenerando rutas de {} con {}",
                args.dir.display(),
                connection.provider.describe()
            );
            let outcome = rc::regenerate(&args.dir, &args.nombres, &connection, &mut |line| {
                eprintln!("{line}")
            })
            .map_err(anyhow::Error::msg)?;
            eprintln!(
                "{} reescritas, {} sin cambios, {} con error",
                outcome.written,
                outcome.unchanged,
                outcome.failed.len()
            );
            outcome.failed.len()
        }
        RoutesVerb::Nueva(args) => {
            let connection = connection(&args.proveedor)?;
            let (path, summary) = rc::create(
                &args.dir,
                &args.nombre,
                &args.paradas,
                args.sobrescribir,
                &connection,
            )
            .map_err(anyhow::Error::msg)?;
            eprintln!("{summary} → {}", path.display());
            0
        }
        RoutesVerb::Ver(args) => match &args.geojson {
            Some(target) => {
                let (text, broken) =
                    rc::geojson(&args.dir, args.nombre.as_deref()).map_err(anyhow::Error::msg)?;
                if target.as_os_str() == "-" {
                    let mut out = std::io::stdout().lock();
                    out.write_all(text.as_bytes())?;
                    out.flush()?;
                } else {
                    rc::save(target, &text).map_err(anyhow::Error::msg)?;
                    eprintln!("GeoJSON → {}", target.display());
                }
                broken
            }
            None => {
                let (text, broken) =
                    rc::show(&args.dir, args.nombre.as_deref()).map_err(anyhow::Error::msg)?;
                print!("{text}");
                broken
            }
        },
    };
    Ok(if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn connection(args: &ProviderArgs) -> anyhow::Result<flota::commands::routes::Connection> {
    let provider = flota::commands::routes::resolve_provider(
        args.proveedor,
        args.url.as_deref(),
        &args.perfil,
    )
    .map_err(anyhow::Error::msg)?;
    Ok(flota::commands::routes::Connection {
        provider,
        timeout: std::time::Duration::from_secs(args.tiempo_limite),
        retry: flota::directions::RetryPolicy {
            retries: args.reintentos,
            ..Default::default()
        },
    })
}

/// Resolves the command-line edge of `flota simular`: the wall clock is read here, never in
/// the simulator.
fn simulate_options(args: &SimulateArgs) -> flota::commands::simulate::Options {
    let ahora = match args.ahora {
        Some(local) => Ahora::Local(local),
        None => Ahora::NowUtc(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64),
        ),
    };
    flota::commands::simulate::Options {
        scenario: args
            .escenario
            .clone()
            .map_or(Source::Embedded, Source::File),
        ahora,
        truth: args
            .verdad
            .clone()
            .unwrap_or_else(|| flota::commands::simulate::default_truth_path(&args.salida)),
        db: args.salida.clone(),
        seed: args.semilla,
        progress: std::io::stderr().is_terminal(),
    }
}
