//! Map tiles from a URL template, fetched concurrently within a deadline and cached on disk.
//!
//! Owns the tile requests (made through `net`, whose errors never carry the URL or a token in
//! the template) and the tile cache, nothing else. The default is OpenStreetMap's tile
//! server, used as its policy asks: an identifying User-Agent (`flota/<version>`, plus
//! `FLOTA_CONTACTO`), the attribution on every map, a local cache that keeps tiles at least
//! seven days, a handful of parallel requests for one picture, never bulk downloads. Any
//! failure — no network, a hanging server, an error status, a body that is not a PNG of the
//! right size — makes the caller draw the offline basemap instead; after a network failure
//! the fetcher rests for a minute so the next maps do not wait for the same timeout. A stale
//! cached tile is better than none and is used when the server cannot be reached.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::png_io::decode_tile;
use super::projection::{TILE_PX, TileRef, View};
use crate::plumbing::mutex::lock;
use crate::plumbing::net::{Get, Http, Reply};

/// OpenStreetMap's standard tile layer.
pub const OSM_TEMPLATE: &str = "https://tile.openstreetmap.org/{z}/{x}/{y}.png";
pub const OSM_ATTRIBUTION: &str = "© colaboradores de OpenStreetMap";
/// A cached tile is fresh this long (the OSM policy's minimum).
const FRESH: Duration = Duration::from_secs(7 * 24 * 3600);
/// A network failure rests the fetcher this long.
const PAUSE: Duration = Duration::from_secs(60);
/// Largest tile body read.
const MAX_TILE_BYTES: u64 = 2 * 1024 * 1024;
/// Requests in flight for one picture.
const PARALLEL: usize = 4;
/// The part of the picture's deadline a connection may take to open.
const CONNECT_SHARE: f64 = 0.375;
/// How long a picture waits for its tiles unless `FLOTA_TILES_LIMITE_S` says otherwise.
const DEFAULT_DEADLINE: Duration = Duration::from_secs(4);

/// Where tiles come from and where they are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TileConfig {
    /// `{z}`, `{x}`, `{y}` (and `{s}`) template; `None` = always offline.
    pub template: Option<String>,
    pub attribution: String,
    /// `None` = no disk cache.
    pub cache_dir: Option<PathBuf>,
    /// Whole-picture deadline; each request gets what remains of it.
    pub deadline: Duration,
}

impl TileConfig {
    /// Tiles from `template` (`None` = always offline), cached under `cache_dir` (`None` = no
    /// disk cache), within the usual whole-picture deadline.
    pub fn new(
        template: Option<String>,
        attribution: String,
        cache_dir: Option<PathBuf>,
    ) -> TileConfig {
        TileConfig {
            template,
            attribution,
            cache_dir,
            deadline: DEFAULT_DEADLINE,
        }
    }

    /// Offline only.
    pub fn offline() -> TileConfig {
        TileConfig {
            template: None,
            attribution: String::new(),
            cache_dir: None,
            deadline: Duration::ZERO,
        }
    }

    /// Where tiles of this template live in the cache: one folder per template.
    fn folder(&self) -> Option<PathBuf> {
        let dir = self.cache_dir.as_ref()?;
        let template = self.template.as_ref()?;
        let host: String = template
            .split("//")
            .nth(1)
            .unwrap_or(template)
            .split('/')
            .next()
            .unwrap_or("teselas")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Some(dir.join(format!("{host}-{:016x}", fnv1a(template.as_bytes()))))
    }

    fn url(&self, tile: &TileRef) -> Option<String> {
        let template = self.template.as_ref()?;
        let subdomain = ["a", "b", "c"][((tile.x + tile.y) % 3) as usize];
        Some(
            template
                .replace("{z}", &tile.zoom.to_string())
                .replace("{x}", &tile.x.to_string())
                .replace("{y}", &tile.y.to_string())
                .replace("{s}", subdomain)
                .replace("{r}", ""),
        )
    }
}

/// 64-bit FNV-1a: a stable folder name for a template.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Why a map has no tiles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Offline {
    /// Tiles are switched off (`FLOTA_TILES_URL=no`).
    Disabled,
    /// A recent failure; the fetcher is resting.
    Resting,
    /// This picture's tiles could not all be had.
    Failed {
        missing: usize,
        total: usize,
        reason: String,
    },
    /// The request was cancelled while tiles loaded.
    Cancelled,
}

impl Offline {
    /// One Spanish clause for the tool's text.
    pub fn describe(&self) -> String {
        match self {
            Offline::Disabled => "teselas desactivadas con FLOTA_TILES_URL".into(),
            Offline::Resting => {
                "el servidor de teselas falló hace menos de un minuto; se reintentará después"
                    .into()
            }
            Offline::Failed {
                missing,
                total,
                reason,
            } => format!("faltaron {missing} de {total} teselas ({reason})"),
            Offline::Cancelled => "solicitud cancelada".into(),
        }
    }
}

/// Where each tile of a picture came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TileStats {
    pub total: usize,
    pub from_cache: usize,
    pub downloaded: usize,
    /// Expired cache entries used because the server could not be reached.
    pub stale: usize,
}

/// Fetches tiles for pictures; one per process, shared by calls.
pub struct TileFetcher {
    pub config: TileConfig,
    client: Mutex<Option<Http>>,
    resting_until: Mutex<Option<Instant>>,
}

type Decoded = (TileRef, Vec<u8>);

impl TileFetcher {
    pub fn new(config: TileConfig) -> TileFetcher {
        TileFetcher {
            config,
            client: Mutex::new(None),
            resting_until: Mutex::new(None),
        }
    }

    /// Every tile of `view`, decoded, or why not. `progress(done, total)` is called on this
    /// thread as tiles arrive; `cancelled()` is polled and abandons the wait.
    pub fn fetch(
        &self,
        view: &View,
        progress: &dyn Fn(usize, usize),
        cancelled: &dyn Fn() -> bool,
    ) -> Result<(Vec<Decoded>, TileStats), Offline> {
        if self.config.template.is_none() {
            return Err(Offline::Disabled);
        }
        let tiles = view.tiles();
        let mut stats = TileStats {
            total: tiles.len(),
            ..TileStats::default()
        };
        let folder = self.config.folder();
        let side = TILE_PX as u32;
        let mut have: Vec<Decoded> = Vec::with_capacity(tiles.len());
        let mut stale: Vec<(TileRef, Vec<u8>)> = Vec::new();
        let mut wanted: Vec<TileRef> = Vec::new();
        for tile in tiles {
            match folder.as_deref().map(|f| read_cached(f, &tile, side)) {
                Some(Some((pixels, true))) => {
                    have.push((tile, pixels));
                    stats.from_cache += 1;
                }
                Some(Some((pixels, false))) => {
                    stale.push((tile, pixels));
                    wanted.push(tile);
                }
                _ => wanted.push(tile),
            }
        }
        progress(have.len(), stats.total);
        if wanted.is_empty() {
            return Ok((have, stats));
        }
        let resting = lock(&self.resting_until).is_some_and(|until| Instant::now() < until);
        let failure = if resting {
            Some(Offline::Resting)
        } else {
            self.download(
                &wanted,
                folder.as_deref(),
                &mut have,
                &mut stats,
                progress,
                cancelled,
            )
            .err()
        };
        let Some(failure) = failure else {
            return Ok((have, stats));
        };
        if failure == Offline::Cancelled {
            return Err(failure);
        }
        // Whatever did not come, an expired copy may stand in for.
        for (tile, pixels) in stale {
            if !have.iter().any(|(t, _)| *t == tile) {
                have.push((tile, pixels));
                stats.stale += 1;
            }
        }
        if have.len() == stats.total {
            return Ok((have, stats));
        }
        Err(match failure {
            Offline::Failed { reason, .. } => Offline::Failed {
                missing: stats.total - have.len(),
                total: stats.total,
                reason,
            },
            other => other,
        })
    }

    fn client(&self) -> Result<Http, String> {
        let mut slot = lock(&self.client);
        if let Some(client) = slot.as_ref() {
            return Ok(client.clone());
        }
        // No client-wide timeout: each request gets what remains of the picture's deadline.
        // Connecting may take the same share of it as 1.5 s is of the usual 4 s, so a deadline
        // raised for a slow machine (`FLOTA_TILES_LIMITE_S`) raises this one too.
        let connect = self.config.deadline.mul_f64(CONNECT_SHARE);
        let client = Http::new(None, connect).map_err(|e| e.to_string())?;
        *slot = Some(client.clone());
        Ok(client)
    }

    /// Downloads `wanted` with a few worker threads until the deadline; decoded tiles are
    /// appended to `have` and written to the cache.
    fn download(
        &self,
        wanted: &[TileRef],
        folder: Option<&Path>,
        have: &mut Vec<Decoded>,
        stats: &mut TileStats,
        progress: &dyn Fn(usize, usize),
        cancelled: &dyn Fn() -> bool,
    ) -> Result<(), Offline> {
        let client = self.client().map_err(|reason| Offline::Failed {
            missing: wanted.len(),
            total: stats.total,
            reason,
        })?;
        let deadline = Instant::now() + self.config.deadline;
        let queue: Arc<Mutex<Vec<(TileRef, String)>>> = Arc::new(Mutex::new(
            wanted
                .iter()
                .filter_map(|t| self.config.url(t).map(|u| (*t, u)))
                .rev()
                .collect(),
        ));
        let (sender, receiver) = mpsc::channel::<(TileRef, Result<Vec<u8>, String>)>();
        // Detached workers: if the deadline passes they finish their one request and exit;
        // nobody waits for them.
        for _ in 0..PARALLEL.min(wanted.len()) {
            let queue = Arc::clone(&queue);
            let sender = sender.clone();
            let client = client.clone();
            std::thread::spawn(move || {
                loop {
                    let Some((tile, url)) = lock(&queue).pop() else {
                        return;
                    };
                    let remaining = deadline.saturating_duration_since(Instant::now());
                    if remaining.is_zero() {
                        return;
                    }
                    let result = get(&client, &url, remaining);
                    if sender.send((tile, result)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(sender);
        let side = TILE_PX as u32;
        let mut reason: Option<String> = None;
        let mut received = 0usize;
        while received < wanted.len() {
            if cancelled() {
                return Err(Offline::Cancelled);
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                reason.get_or_insert_with(|| {
                    format!("sin respuesta en {} s", self.config.deadline.as_secs_f64())
                });
                break;
            }
            match receiver.recv_timeout(remaining.min(Duration::from_millis(100))) {
                Ok((tile, Ok(body))) => {
                    received += 1;
                    match decode_tile(&body, side) {
                        Ok(pixels) => {
                            if let Some(folder) = folder {
                                write_cached(folder, &tile, &body);
                            }
                            have.push((tile, pixels));
                            stats.downloaded += 1;
                            progress(have.len(), stats.total);
                        }
                        Err(why) => {
                            reason.get_or_insert(why);
                        }
                    }
                }
                Ok((_, Err(why))) => {
                    received += 1;
                    reason.get_or_insert(why);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        match reason {
            None if received == wanted.len() => Ok(()),
            reason => {
                let reason = reason.unwrap_or_else(|| "respuestas incompletas".into());
                crate::log_warn!("teselas: {reason}; se dibuja el mapa base sin conexión");
                *lock(&self.resting_until) = Some(Instant::now() + PAUSE);
                Err(Offline::Failed {
                    missing: wanted.len(),
                    total: stats.total,
                    reason,
                })
            }
        }
    }
}

/// One GET with a timeout; the body, bounded, or a Spanish reason (from `net`: no URL, no
/// token).
fn get(client: &Http, url: &str, timeout: Duration) -> Result<Vec<u8>, String> {
    let request = Get::new(url).timeout(timeout).max_bytes(MAX_TILE_BYTES);
    client
        .get(&request)
        .and_then(Reply::require_success)
        .map(|reply| reply.body)
        .map_err(|e| e.to_string())
}

fn tile_path(folder: &Path, tile: &TileRef) -> PathBuf {
    folder
        .join(tile.zoom.to_string())
        .join(tile.x.to_string())
        .join(format!("{}.png", tile.y))
}

/// A cached tile, decoded, and whether it is still fresh. A corrupt file is removed.
fn read_cached(folder: &Path, tile: &TileRef, side: u32) -> Option<(Vec<u8>, bool)> {
    let path = tile_path(folder, tile);
    let bytes = std::fs::read(&path).ok()?;
    let fresh = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < FRESH);
    match decode_tile(&bytes, side) {
        Ok(pixels) => Some((pixels, fresh)),
        Err(_) => {
            let _ = std::fs::remove_file(&path);
            None
        }
    }
}

/// Stores a tile whole, so a reader never sees half of one. Failures only cost the cache.
fn write_cached(folder: &Path, tile: &TileRef, body: &[u8]) {
    let _ = crate::plumbing::output::write_cache_file(&tile_path(folder, tile), body);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_expand_and_cache_folders_are_per_template() {
        let config = TileConfig {
            template: Some("https://{s}.tiles.example.org/{z}/{x}/{y}{r}.png".into()),
            attribution: String::new(),
            cache_dir: Some(PathBuf::from("/cache")),
            deadline: Duration::from_secs(1),
        };
        let tile = TileRef {
            zoom: 12,
            x: 1018,
            y: 1883,
            left_px: 0,
            top_px: 0,
        };
        assert_eq!(
            config.url(&tile).unwrap(),
            "https://a.tiles.example.org/12/1018/1883.png"
        );
        let folder = config.folder().unwrap();
        let name = folder.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("_s_.tiles.example.org-"), "{name}");
        assert_eq!(folder.parent(), Some(Path::new("/cache")));
        let other = TileConfig {
            template: Some(OSM_TEMPLATE.into()),
            ..config.clone()
        };
        assert_ne!(other.folder(), config.folder());
    }
}
