//! What the fleet tools share: the database behind them, "now", and how people name things.
//!
//! Owns [`Fleet`], the tools' context: it opens the database read-only and lazily (a missing
//! or unreadable file never stops the server; each call says what to do), reloads when the
//! file is replaced (another inode, size or time) or changed in place (SQLite's
//! `data_version` on a kept connection), keeps a small pool of connections for concurrent
//! calls, and resolves plates, geofence names and dates into Spanish errors the model can act
//! on. Whether the detections can be trusted is `trust.rs`. "Now" is `--ahora`/`FLOTA_AHORA`
//! if given (a wall-clock time of the fleet's zone; one the clocks skip is refused), else the
//! data set's `ahora` from `meta`, else the [`Clock`] it was handed (the wall clock, for a live
//! database). Days are each unit's: a unit's "hoy" and its day bounds are those of its own zone
//! (`Vehicle::zone`); fleet-wide date words are read in the fleet's zone (`meta`'s).

pub mod dates;
mod day;
mod evidence;
pub mod places;
pub mod text;
mod trust;

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use std::time::SystemTime;

use chrono::NaiveDate;
use chrono_tz::Tz;

use crate::calendar::{self, WallTime};
use crate::mcp::ToolError;
use crate::plumbing::clock::Clock;
use crate::store::{AnalysisState, Location, Meta, Store, StoreError, StoredFence, Vehicle};
use places::{Geocoder, Places};
use text::Found;

use crate::geometry::earth::LatLon;
pub use day::{DayTrack, is_long_stop, is_working_stop, lasts_long, no_reports, working_window};
pub use evidence::{Evidencia, Umbral};
pub use trust::with_warning;

/// A route of the fleet as a line on the map, with its named stops. The line is decoded
/// from its polyline on first use: the snapshot is loaded before `initialize` is answered,
/// and decoding every route there was a seventh of a server's start.
#[derive(Debug, Clone)]
pub struct RouteLine {
    pub name: String,
    polyline: String,
    points: std::sync::OnceLock<Vec<LatLon>>,
    pub stops: Vec<(String, LatLon)>,
}

impl RouteLine {
    pub fn new(name: String, polyline: String, stops: Vec<(String, LatLon)>) -> RouteLine {
        RouteLine {
            name,
            polyline,
            points: std::sync::OnceLock::new(),
            stops,
        }
    }

    /// The line's points. The writer validated every polyline; a bad one only loses its
    /// road (no points), not its name or stops.
    pub fn points(&self) -> &[LatLon] {
        self.points.get_or_init(|| {
            polyline::decode_polyline(&self.polyline, 5)
                .map(|line| line.0.iter().map(|c| LatLon::new(c.y, c.x)).collect())
                .unwrap_or_default()
        })
    }

    /// Whether [`RouteLine::points`] has been asked for.
    pub fn is_decoded(&self) -> bool {
        self.points.get().is_some()
    }
}

/// Reference data loaded once per database file.
#[derive(Debug)]
pub struct Snapshot {
    pub meta: Meta,
    pub vehicles: Vec<Vehicle>,
    pub fences: Vec<StoredFence>,
    pub places: Places,
    /// The fleet's routes, decoded: the offline basemap's roads.
    pub routes: Vec<RouteLine>,
    /// The fleet's "now", UTC seconds, and its local date in the fleet's zone.
    pub now_utc: i64,
    pub today: NaiveDate,
    /// How far the stored detections can be trusted (see `trust.rs`).
    pub analysis: AnalysisState,
    /// The database as the user named it, for sentences that name a command to run.
    db_shown: String,
}

impl Snapshot {
    /// The fleet's zone: fleet-wide date words are read in it.
    pub fn zone(&self) -> Tz {
        self.meta.zone
    }

    pub fn zone_name(&self) -> String {
        self.meta.zone.name().to_owned()
    }

    /// Every zone of the fleet: its own first, then the units' others, each once.
    pub fn zones(&self) -> Vec<Tz> {
        let mut zones = vec![self.meta.zone];
        for vehicle in &self.vehicles {
            if !zones.contains(&vehicle.zone) {
                zones.push(vehicle.zone);
            }
        }
        zones
    }

    /// For a fleet in more than one zone, how a fleet-wide answer reads its dates; `None` when
    /// every unit shares the fleet's zone.
    pub fn zones_note(&self) -> Option<String> {
        let zones = self.zones();
        if zones.len() < 2 {
            return None;
        }
        let others: Vec<String> = zones[1..]
            .iter()
            .map(|zone| {
                let plates: Vec<&str> = self
                    .vehicles
                    .iter()
                    .filter(|v| v.zone == *zone)
                    .map(|v| v.plate.as_str())
                    .take(10)
                    .collect();
                format!("{} ({})", zone.name(), plates.join(", "))
            })
            .collect();
        Some(format!(
            "La flota está en varias zonas horarias: las fechas ('hoy', 'ayer', días de la semana) se leen en la de la flota, {}, y cada unidad se cuenta en sus propios días locales; en otra zona: {}.",
            self.zone_name(),
            others.join("; ")
        ))
    }

    /// The local date of "now" in `zone`.
    pub fn today_in(&self, zone: Tz) -> NaiveDate {
        calendar::local_date(zone, self.now_utc)
    }

    /// The geofence with database id `id`.
    pub fn fence_name(&self, id: i64) -> Option<&str> {
        self.fences
            .iter()
            .find(|f| f.id == id)
            .map(|f| f.fence.name.as_str())
    }

    /// Resolves a plate to a vehicle, or a Spanish error with suggestions.
    pub fn vehicle(&self, plate: &str) -> Result<&Vehicle, ToolError> {
        let plates: Vec<&str> = self.vehicles.iter().map(|v| v.plate.as_str()).collect();
        match text::find_plate(plate, &plates) {
            Found::One(index) => Ok(&self.vehicles[index]),
            Found::None(near) if !near.is_empty() => {
                let suggestions: Vec<&str> = near.iter().map(|i| plates[*i]).collect();
                Err(ToolError::Failed(format!(
                    "No existe la placa '{plate}'. ¿Quiso decir {}?",
                    suggestions.join(" o ")
                )))
            }
            _ => {
                let mut sorted = plates.clone();
                sorted.sort_unstable();
                Err(ToolError::Failed(format!(
                    "No existe la placa '{plate}'. Las placas registradas son: {}.",
                    sorted.join(", ")
                )))
            }
        }
    }

    /// Resolves a geofence name (case and accents ignored, partial names accepted).
    pub fn fence(&self, name: &str) -> Result<&StoredFence, ToolError> {
        let names: Vec<&str> = self.fences.iter().map(|f| f.fence.name.as_str()).collect();
        match text::find_name(name, &names) {
            Found::One(index) => Ok(&self.fences[index]),
            Found::Ambiguous(indexes) => {
                let options: Vec<&str> = indexes.iter().map(|i| names[*i]).collect();
                Err(ToolError::Failed(format!(
                    "El nombre '{name}' es ambiguo: coincide con {}. Indique cuál.",
                    options.join(", ")
                )))
            }
            Found::None(near) => {
                let hint = if near.is_empty() {
                    String::new()
                } else {
                    format!(
                        " ¿Quiso decir {}?",
                        near.iter()
                            .map(|i| names[*i])
                            .collect::<Vec<_>>()
                            .join(" o ")
                    )
                };
                Err(ToolError::Failed(format!(
                    "No existe la geocerca '{name}'.{hint} Las geocercas son: {}.",
                    names.join(", ")
                )))
            }
        }
    }

    /// A date argument resolved against today in the fleet's zone, or an argument error.
    pub fn date(&self, argument: &str, text: &str) -> Result<NaiveDate, ToolError> {
        self.date_in(self.meta.zone, argument, text)
    }

    /// A date argument about `vehicle`, resolved against its own today.
    pub fn date_for(
        &self,
        vehicle: &Vehicle,
        argument: &str,
        text: &str,
    ) -> Result<NaiveDate, ToolError> {
        self.date_in(vehicle.zone, argument, text)
    }

    /// A date argument resolved against today in `zone`. A day after today has no data by
    /// definition; saying so beats "no reports that day".
    fn date_in(&self, zone: Tz, argument: &str, text: &str) -> Result<NaiveDate, ToolError> {
        let today = self.today_in(zone);
        let date = dates::resolve(argument, text, today).map_err(ToolError::InvalidArguments)?;
        if date > today {
            return Err(ToolError::Failed(format!(
                "La fecha {date} ('{argument}') es posterior a hoy, {} {} (hora de {}): \
                 todavía no hay datos de ese día.",
                dates::weekday_es(today),
                today,
                zone.name()
            )));
        }
        Ok(date)
    }
}

/// UTC bounds `[start, end)` of a local date in `zone`: the calendar's rule.
pub fn day_bounds(zone: Tz, date: NaiveDate) -> (i64, i64) {
    calendar::day_bounds(zone, date)
}

/// "Now": `ahora` (`--ahora`, `FLOTA_AHORA`) on the fleet zone's clock if given, else the data
/// set's, else the clock's. A time the zone's clocks skip is refused in Spanish, as
/// `flota simular` refuses it.
pub fn now_utc(ahora: Option<WallTime>, meta: &Meta, clock: &Clock) -> Result<i64, String> {
    match ahora {
        Some(wall) => calendar::instant(meta.zone, wall).map_err(|err| ahora_refused(&err)),
        None => Ok(meta.ahora_utc.unwrap_or_else(|| clock.now_utc())),
    }
}

/// Why `--ahora` names no instant, and what to write instead: the advice depends on why (a
/// time the clocks skip has a next one; a wrong offset has a right one; there is no "jump"
/// to go past in the other two).
fn ahora_refused(err: &calendar::WallClockError) -> String {
    let advice = match err {
        calendar::WallClockError::Skipped { to, .. } => {
            format!("Indique una hora que exista, por ejemplo {to}, la siguiente al salto.")
        }
        calendar::WallClockError::WrongOffset { actual, .. } => {
            format!("Escriba la hora sin desfase o con el que rige ({actual}).")
        }
        calendar::WallClockError::OutOfRange { .. } => "Indique una fecha cercana.".to_owned(),
    };
    format!("--ahora (o FLOTA_AHORA) {err}. {advice}")
}

/// Which file a snapshot was read from. Renaming another file over the database changes the
/// inode even when the size and modification time are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileIdentity {
    device: u64,
    inode: u64,
    len: u64,
    modified: Option<SystemTime>,
}

impl FileIdentity {
    fn of(path: &Path) -> Option<FileIdentity> {
        let metadata = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let (device, inode) = {
            use std::os::unix::fs::MetadataExt;
            (metadata.dev(), metadata.ino())
        };
        // Elsewhere the file index is not on stable Rust; `data_version` still sees commits.
        #[cfg(not(unix))]
        let (device, inode) = (0, 0);
        Some(FileIdentity {
            device,
            inode,
            len: metadata.len(),
            modified: metadata.modified().ok(),
        })
    }
}

/// The snapshot in use and what tells whether it is still the file's content.
struct Loaded {
    snapshot: Arc<Snapshot>,
    file: Option<FileIdentity>,
    /// A connection kept open on the file the snapshot was read from: its `data_version`
    /// changes when any other connection commits to that file.
    watch: Store,
    data_version: i64,
}

/// The tools' shared context.
pub struct Fleet {
    db: Location,
    /// The per-call limit, given to a database server as its statement timeout.
    call_limit: Option<Duration>,
    ahora: Option<WallTime>,
    /// "Now" when neither `ahora` nor the data says.
    clock: Clock,
    loaded: Mutex<Option<Loaded>>,
    /// Idle read-only connections, tagged with the file generation they were opened on.
    pool: Mutex<Vec<(u64, Store)>>,
    generation: std::sync::atomic::AtomicU64,
    /// Loads of another file than the last one (a database replaced, or found at last).
    replaced: std::sync::atomic::AtomicU64,
    pub geocoder: Geocoder,
}

impl Fleet {
    pub fn new(
        db: impl Into<Location>,
        ahora: Option<WallTime>,
        geocoder: Geocoder,
        clock: Clock,
    ) -> Fleet {
        let db = match db.into() {
            Location::Sqlite(path) if !path.is_absolute() => Location::Sqlite(
                std::env::current_dir().map_or_else(|_| path.clone(), |cwd| cwd.join(&path)),
            ),
            other => other,
        };
        Fleet {
            db,
            call_limit: None,
            ahora,
            clock,
            loaded: Mutex::new(None),
            pool: Mutex::new(Vec::new()),
            generation: std::sync::atomic::AtomicU64::new(0),
            replaced: std::sync::atomic::AtomicU64::new(0),
            geocoder,
        }
    }

    /// Ends a database server's statements at `limit` (the server's per-call limit).
    pub fn with_call_limit(mut self, limit: Option<Duration>) -> Fleet {
        self.call_limit = limit;
        self
    }

    pub fn db(&self) -> &Location {
        &self.db
    }

    /// Whether the `ahora` the fleet was given exists on its zone's clock, when the database
    /// can tell the zone now (a missing database is left for the tools to explain).
    pub fn ahora_exists(&self) -> Result<(), String> {
        if self.ahora.is_none() {
            return Ok(());
        }
        let Ok(meta) = Store::open(&self.db).and_then(|store| store.meta()) else {
            return Ok(());
        };
        now_utc(self.ahora, &meta, &self.clock).map(|_| ())
    }

    /// A number that moves each time another database file is loaded (replaced by a rename,
    /// or found at last); writes into the same file do not move it. Checks the file first, as
    /// [`Fleet::snapshot`] does.
    pub fn generation(&self) -> u64 {
        // A missing or unreadable database keeps the number: nothing new to announce.
        let _ = self.snapshot();
        self.replaced.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn store_error(&self, err: StoreError) -> ToolError {
        let message = match err {
            StoreError::Missing { .. } => format!(
                "No hay base de datos en {}. Genérela con: flota simular --salida {}",
                self.db, self.db
            ),
            other => format!("{other}."),
        };
        ToolError::Failed(message)
    }

    /// The current snapshot, reloaded if the database file was replaced or changed, or (for a
    /// live database) the clock's second changed. Costs a `stat` and one
    /// `PRAGMA data_version` when nothing changed.
    pub fn snapshot(&self) -> Result<Arc<Snapshot>, ToolError> {
        let file = self.db.as_path().and_then(FileIdentity::of);
        let mut slot = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(loaded) = slot.as_ref()
            && loaded.file == file
        {
            match loaded.watch.data_version() {
                Ok(version)
                    if version == loaded.data_version && !self.clock_moved(&loaded.snapshot) =>
                {
                    return Ok(Arc::clone(&loaded.snapshot));
                }
                Ok(_) => {}
                // A server that dropped the connection (restarted): load again on a new one.
                Err(_) if loaded.watch.is_broken() => {}
                Err(e) => return Err(self.store_error(e)),
            }
        }
        // New, replaced or changed: pooled connections may point at a file no longer there.
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        let another_file = slot.as_ref().is_none_or(|loaded| loaded.file != file);
        let loaded = self.load(file)?;
        let snapshot = Arc::clone(&loaded.snapshot);
        *slot = Some(loaded);
        if another_file {
            self.replaced
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        Ok(snapshot)
    }

    /// Reads the fleet's fixed data (meta, vehicles, fences, routes) and the detections' state
    /// in one read transaction, with the `data_version` they belong to: a commit after it makes
    /// the next call load again.
    fn load(&self, file: Option<FileIdentity>) -> Result<Loaded, ToolError> {
        let store = self.open_store()?;
        let (data_version, meta, analysis, vehicles, fences, stored_routes) = store
            .read_consistently(|s| {
                let data_version = s.data_version()?;
                let meta = s.meta()?;
                let analysis = s.analysis_state(&meta)?;
                Ok((
                    data_version,
                    meta,
                    analysis,
                    s.vehicles()?,
                    s.fences()?,
                    s.routes()?,
                ))
            })
            .map_err(|e| self.store_error(e))?;
        let stops: Vec<_> = stored_routes
            .iter()
            .flat_map(|r| r.stops.iter().skip(1).cloned())
            .collect();
        let routes = stored_routes
            .into_iter()
            .map(|r| RouteLine::new(r.name, r.polyline, r.stops))
            .collect();
        let fence_list: Vec<_> = fences.iter().map(|f| f.fence.clone()).collect();
        let now_utc = now_utc(self.ahora, &meta, &self.clock).map_err(ToolError::Failed)?;
        let today = dates::local_date(meta.zone, now_utc);
        let snapshot = Arc::new(Snapshot {
            places: Places::new(&fence_list, &stops),
            routes,
            meta,
            vehicles,
            fences,
            now_utc,
            today,
            analysis,
            db_shown: self.db.to_string(),
        });
        Ok(Loaded {
            snapshot,
            file,
            watch: store,
            data_version,
        })
    }

    /// Whether `snapshot`'s "now" is the clock's and the clock has moved on since: a live
    /// database's "now" advances even when nothing is written (a unit goes silent).
    fn clock_moved(&self, snapshot: &Snapshot) -> bool {
        self.ahora.is_none()
            && snapshot.meta.ahora_utc.is_none()
            && self.clock.now_utc() != snapshot.now_utc
    }

    /// A read-only connection whose queries stop when the current call is cancelled (by the
    /// client or the server's time limit), so a cancelled call frees its worker.
    fn open_store(&self) -> Result<Store, ToolError> {
        let mut store = Store::open(&self.db).map_err(|e| self.store_error(e))?;
        store.interrupt_when(
            crate::mcp::current_call_cancelled,
            crate::mcp::current_call_flag,
        );
        store
            .set_statement_timeout(self.call_limit)
            .map_err(|e| self.store_error(e))?;
        Ok(store)
    }

    /// Runs `query` on a pooled read-only connection.
    pub fn query<T>(
        &self,
        query: impl Fn(&Store) -> Result<T, StoreError>,
    ) -> Result<T, ToolError> {
        let generation = self.generation.load(std::sync::atomic::Ordering::SeqCst);
        let pooled = self
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut store = match pooled {
            Some((g, store)) if g == generation && !store.is_broken() => store,
            _ => self.open_store()?,
        };
        let mut result = query(&store);
        // A pooled connection the server dropped (it restarted): once more on a new one.
        if result.is_err() && store.is_broken() {
            store = self.open_store()?;
            result = query(&store);
        }
        let result = result.map_err(|e| self.store_error(e));
        let mut pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
        if pool.len() < 8
            && !store.is_broken()
            && generation == self.generation.load(std::sync::atomic::Ordering::SeqCst)
        {
            pool.push((generation, store));
        }
        result
    }
}

#[cfg(test)]
mod ahora_tests {
    use super::*;

    /// The advice fits the reason: past the jump for a skipped time, the offset in force for
    /// a wrong one (Sydney, Sunday 4 October 2026: 02:00 -> 03:00 +11:00).
    #[test]
    fn a_refused_now_says_what_to_write_instead() {
        let sydney: Tz = "Australia/Sydney".parse().unwrap();
        let refusal = |text: &str| {
            let wall = WallTime::parse(text).unwrap();
            ahora_refused(&calendar::instant(sydney, wall).unwrap_err())
        };
        let skipped = refusal("2026-10-04T02:30");
        assert!(skipped.contains("por ejemplo 03:00"), "{skipped}");
        let wrong = refusal("2026-10-04T03:20+10:00");
        assert!(
            wrong.contains("rige (+11:00)") || wrong.contains("(+11:00)"),
            "{wrong}"
        );
        assert!(!wrong.contains("salto"), "{wrong}");
    }
}

#[cfg(test)]
mod route_line_tests {
    use super::*;

    /// Google's documented example: three points.
    const LINE: &str = "_p~iF~ps|U_ulLnnqC_mqNvxq`@";

    #[test]
    fn a_route_line_is_decoded_on_first_use_and_a_bad_one_has_no_road() {
        let route = RouteLine::new("r".into(), LINE.into(), Vec::new());
        assert!(!route.is_decoded());
        let points = route.points();
        assert_eq!(points.len(), 3);
        assert!((points[0].lat - 38.5).abs() < 1e-9 && (points[0].lon + 120.2).abs() < 1e-9);
        assert!(route.is_decoded());
        let broken = RouteLine::new("r".into(), "\u{1}".into(), Vec::new());
        assert!(broken.points().is_empty());
    }
}
