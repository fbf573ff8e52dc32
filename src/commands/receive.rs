//! `flota recibir`: the OsmAnd-protocol receiver, writing into a live database.
//!
//! Owns the verb: which database (created empty when missing, made live when it was a
//! simulation), which address (loopback unless `--permitir-red`, with a warning), the
//! declared tracker ids, the writer thread and the HTTP server on a tokio runtime, and the
//! stop: SIGINT or SIGTERM closes the listener, requests in flight get their answers, the
//! writer commits what was accepted and republishes every vehicle, exit 0. The protocol,
//! the sessions and the server are `crate::ingest`'s.

use std::io::Write;
use std::process::ExitCode;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use super::{Io, Settings};
use crate::cli::{ReceiveArgs, SpeedChoice};
use crate::fleet::text::plate_key;
use crate::ingest::devices::Devices;
use crate::ingest::live::DEFAULT_LIMIT_KMH;
use crate::ingest::osmand::{self, SpeedUnit};
use crate::ingest::server::{self, App, Limits, Protocol};
use crate::ingest::writer;
use crate::plumbing::clock::Clock;
use crate::plumbing::output::Staged;
use crate::store::{Location, NewDatabase, Store};
use crate::{log_info, log_warn};

/// How often every vehicle is republished at "now" (open stops, losses going on).
const TICK: Duration = Duration::from_secs(30);

/// Options that cannot work together: a usage error (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ReceiveUsage {
    #[error(
        "--escuchar {0} no es una dirección local: el protocolo OsmAnd no tiene autenticación y cualquiera que la alcance podría enviar posiciones de cualquier unidad; añada --permitir-red si es lo que quiere (ver docs/ingesta.md)"
    )]
    Exposed(std::net::SocketAddr),
    #[error("--dispositivo {id}={plate}: no hay ninguna unidad con la placa {plate} en {db}")]
    UnknownPlate {
        id: String,
        plate: String,
        db: String,
    },
}

/// Receives until SIGINT or SIGTERM.
pub fn run(args: ReceiveArgs, io: &mut Io, settings: &Settings) -> anyhow::Result<ExitCode> {
    let db = settings.db_location(args.db.as_deref())?;
    if !args.escuchar.ip().is_loopback() {
        if !args.permitir_red {
            return Err(ReceiveUsage::Exposed(args.escuchar).into());
        }
        log_warn!(
            "escuchando en {}, fuera de este equipo: el protocolo OsmAnd no tiene autenticación; quien alcance esta dirección puede enviar posiciones a nombre de cualquier unidad",
            args.escuchar
        );
    }
    let clock = Clock::system();
    ensure_database(&db, args.zona, &clock)?;
    let store = Store::open_live(db.clone())?;
    if store.mark_live()? {
        log_info!(
            "{} era una simulación con su propio «ahora»; ahora es una base en vivo: su «ahora» es el reloj",
            db
        );
    }
    declare_devices(&store, &args.dispositivos, &db)?;
    let meta = store.meta()?;
    if let Some(zone) = args.zona
        && zone != meta.zone
    {
        log_warn!(
            "--zona {} no cambia la zona de {}, que es {}",
            zone.name(),
            db,
            meta.zone.name()
        );
    }
    let devices = Arc::new(RwLock::new(Devices::new(
        &store.vehicles()?,
        &store.devices()?,
    )));
    let protocol = Protocol {
        decode: osmand::Options {
            speed: speed_unit(args.velocidad),
            zone: meta.zone,
        },
        register_unknown: args.registrar_desconocidas,
    };
    let (jobs, queue) = std::sync::mpsc::sync_channel(args.cola as usize);
    let (ready, started) = std::sync::mpsc::channel();
    let writer_clock = clock.clone();
    let writer_devices = Arc::clone(&devices);
    let writer = std::thread::Builder::new()
        .name("escritor".into())
        .spawn(move || {
            writer::run(
                &store,
                &writer_clock,
                &queue,
                &writer_devices,
                &writer::Options { tick: TICK },
                ready,
            )
        })?;
    match started.recv() {
        Ok(Ok(())) => {}
        Ok(Err(why)) => anyhow::bail!("no se pudo preparar {}: {why}", db),
        Err(_) => anyhow::bail!("el escritor de {} terminó antes de empezar", db),
    }
    let limits = Limits {
        connections: 4096,
        read: Duration::from_secs(args.tiempo_limite),
    };
    let app = Arc::new(App::new(protocol, limits, devices, jobs, clock));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.escuchar)
            .await
            .map_err(|e| anyhow::anyhow!("no se pudo escuchar en {}: {e}", args.escuchar))?;
        log_info!(
            "flota recibir {}: escuchando en http://{} (protocolo OsmAnd), base {}",
            env!("CARGO_PKG_VERSION"),
            listener.local_addr()?,
            db
        );
        server::serve(listener, app, stop_signal()).await;
        anyhow::Ok(())
    })?;
    drop(runtime);
    log_info!("deteniendo: se escribe lo aceptado");
    match writer.join() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e.into()),
        Err(_) => anyhow::bail!("el escritor de {} falló", db),
    }
    writeln!(io.stderr, "detenido; todo lo confirmado está en {}", db)?;
    Ok(ExitCode::SUCCESS)
}

fn speed_unit(choice: SpeedChoice) -> SpeedUnit {
    match choice {
        SpeedChoice::Nudos => SpeedUnit::Knots,
        SpeedChoice::Kmh => SpeedUnit::Kmh,
        SpeedChoice::Mps => SpeedUnit::Mps,
        SpeedChoice::Mph => SpeedUnit::Mph,
    }
}

/// Creates an empty live database at `db` when there is none: a SQLite file atomically (a
/// temporary file renamed into place), flota's tables on a PostgreSQL server in one
/// transaction.
pub fn ensure_database(
    db: &Location,
    zone: Option<chrono_tz::Tz>,
    clock: &Clock,
) -> anyhow::Result<()> {
    let zone_or_utc = zone.unwrap_or(chrono_tz::UTC);
    let new = NewDatabase {
        zone: zone_or_utc,
        config: crate::engine::DetectionConfig::default(),
        fleet_limit_kmh: DEFAULT_LIMIT_KMH,
        now_utc: clock.now_utc(),
    };
    let created = match db {
        Location::Sqlite(path) if path.exists() => false,
        Location::Sqlite(path) => {
            let staged = Staged::prepare(path)?;
            crate::store::live::create(staged.temp(), &new)?;
            staged.commit()?;
            true
        }
        Location::Postgres(_) => Store::create_live_on_server(db, &new)?,
    };
    if created {
        log_info!(
            "base nueva {db} (zona {}, sin unidades)",
            zone_or_utc.name()
        );
    }
    Ok(())
}

/// Records each `--dispositivo ID=PLACA`.
fn declare_devices(
    store: &Store,
    declared: &[(String, String)],
    db: &Location,
) -> anyhow::Result<()> {
    if declared.is_empty() {
        return Ok(());
    }
    let vehicles = store.vehicles()?;
    for (id, plate) in declared {
        let vehicle = vehicles
            .iter()
            .find(|v| plate_key(&v.plate) == plate_key(plate))
            .ok_or_else(|| ReceiveUsage::UnknownPlate {
                id: id.clone(),
                plate: plate.clone(),
                db: db.to_string(),
            })?;
        store.set_device(id, vehicle.id)?;
        log_info!("el rastreador {id} informa por {}", vehicle.plate);
    }
    Ok(())
}

/// Resolves at SIGINT or SIGTERM.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
