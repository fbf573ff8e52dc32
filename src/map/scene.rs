//! What a route map shows, decided before anything is drawn: the track with speeds and
//! breaks, stops, speeding episodes, signal losses, geofences, the basemap's roads and
//! landmarks, and the words of the title.
//!
//! Owns turning a [`DayTrack`] (positions and detections, never the truth log) into plain
//! geometry and Spanish labels. Knows nothing of pixels; `draw` does.

use chrono_tz::Tz;

use crate::fleet::{DayTrack, Snapshot, dates};
use crate::geometry::earth::LatLon;
use crate::geometry::geofence::applicable_limit_kmh;

/// One report on the drawn line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrackPoint {
    pub p: LatLon,
    pub speed_kmh: f64,
    /// The limit that applied there (the unit's, or a geofence's own): its colour is the
    /// speed's share of it.
    pub limit_kmh: f64,
    pub ts_utc: i64,
    /// The line is not drawn from the previous point to this one (a signal loss between).
    pub after_gap: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StopMark {
    pub p: LatLon,
    pub minutes: f64,
    /// A long stop as `alertas` counts it (an open one judged at the fleet's now).
    pub long: bool,
    /// Local `HH:MM` the stop began.
    pub start: String,
    /// The geofence or route stop it was at, when it was at one.
    pub place: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SpeedingMark {
    /// Where the top speed was reported.
    pub p: LatLon,
    pub max_kmh: f64,
    pub limit_kmh: f64,
    pub from_utc: i64,
    pub to_utc: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GapMark {
    /// The last report before the silence.
    pub from: LatLon,
    /// The first report after it; `None` while the unit is still silent, or when that report
    /// falls after the day.
    pub to: Option<LatLon>,
    pub label: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FenceMark {
    pub name: String,
    pub outline: Vec<LatLon>,
    /// The unit was inside it that day: its name is always shown.
    pub visited: bool,
}

/// One unit on the fleet map: where it last reported, its state's colour, its label.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitMark {
    pub p: LatLon,
    pub rgb: (u8, u8, u8),
    /// Plate and minutes in the state, e.g. «P-123BCD · 12 min».
    pub label: String,
    /// No signal: the disc is struck through.
    pub silent: bool,
}

/// Everything one map shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Scene {
    pub title: String,
    pub subtitle: String,
    pub track: Vec<TrackPoint>,
    /// The unit's own speed limit.
    pub limit_kmh: f64,
    /// Other limits that applied on the track (geofences with their own), ascending.
    pub zone_limits_kmh: Vec<f64>,
    pub stops: Vec<StopMark>,
    pub speeding: Vec<SpeedingMark>,
    pub gaps: Vec<GapMark>,
    pub fences: Vec<FenceMark>,
    /// The fleet's route lines: the offline basemap's roads.
    pub roads: Vec<Vec<LatLon>>,
    /// Named places (route stops) for the offline basemap.
    pub landmarks: Vec<(String, LatLon)>,
    /// The day was still running at the fleet's "now": the last point is not an end.
    pub ongoing: bool,
    /// The fleet map's units (empty on a day's map).
    pub units: Vec<UnitMark>,
    /// The fleet map's legend: each state's colour and words (empty on a day's map, whose
    /// legend is the speed bands).
    pub states: Vec<((u8, u8, u8), String)>,
}

impl Scene {
    /// Builds the scene of one day.
    pub fn from_day(track: &DayTrack, snapshot: &Snapshot) -> Scene {
        let zone = track.zone;
        let now = snapshot.now_utc;
        let stops = stop_marks(track, snapshot);
        let visited: Vec<i64> = track.visits.iter().filter_map(|v| v.fence_id).collect();
        let fences = snapshot
            .fences
            .iter()
            .map(|f| FenceMark {
                name: f.fence.name.clone(),
                outline: f.fence.outline(),
                visited: visited.contains(&f.id),
            })
            .collect();
        let points = track_points(track, snapshot);
        let mut zone_limits_kmh: Vec<f64> = points
            .iter()
            .map(|t| t.limit_kmh)
            .filter(|l| *l != track.vehicle.limit_kmh)
            .collect();
        zone_limits_kmh.sort_by(f64::total_cmp);
        zone_limits_kmh.dedup();
        Scene {
            title: format!(
                "{} · {} · {:.1} km",
                track.vehicle.plate,
                dates::long_es(track.date),
                track.day.km
            ),
            subtitle: subtitle(track, stops.len(), zone),
            track: points,
            limit_kmh: track.vehicle.limit_kmh,
            zone_limits_kmh,
            stops,
            speeding: speeding_marks(track, now),
            gaps: gap_marks(track, now, zone),
            fences,
            roads: snapshot
                .routes
                .iter()
                .map(|r| r.points().to_vec())
                .collect(),
            landmarks: landmarks(snapshot),
            ongoing: track.to_utc < crate::fleet::day_bounds(zone, track.date).1,
            units: Vec::new(),
            states: Vec::new(),
        }
    }

    /// The fleet now: every unit given, over the fleet's fences, roads and landmarks.
    pub fn fleet(
        title: String,
        subtitle: String,
        units: Vec<UnitMark>,
        states: Vec<((u8, u8, u8), String)>,
        snapshot: &Snapshot,
    ) -> Scene {
        Scene {
            title,
            subtitle,
            track: Vec::new(),
            limit_kmh: 0.0,
            zone_limits_kmh: Vec::new(),
            stops: Vec::new(),
            speeding: Vec::new(),
            gaps: Vec::new(),
            fences: snapshot
                .fences
                .iter()
                .map(|f| FenceMark {
                    name: f.fence.name.clone(),
                    outline: f.fence.outline(),
                    visited: false,
                })
                .collect(),
            roads: snapshot
                .routes
                .iter()
                .map(|r| r.points().to_vec())
                .collect(),
            landmarks: landmarks(snapshot),
            ongoing: false,
            units,
            states,
        }
    }

    /// South-west and north-east corners of what must be visible: the track and its stops.
    /// Longitudes are taken on the shortest arc that holds them all: data either side of
    /// the antimeridian (Fiji, Chukotka, the Aleutians) gets a box whose east longitude is
    /// past 180° (`ne.lon − sw.lon` is the span; the projection is linear in longitude, and
    /// tiles wrap), not one across the whole world.
    pub fn bounds(&self) -> Option<(LatLon, LatLon)> {
        let mut points = self
            .track
            .iter()
            .map(|t| t.p)
            .chain(self.stops.iter().map(|s| s.p))
            .chain(self.units.iter().map(|u| u.p));
        let first = points.next()?;
        let (mut sw, mut ne) = (first, first);
        let mut lons = vec![first.lon];
        for p in points {
            sw = LatLon::new(sw.lat.min(p.lat), sw.lon.min(p.lon));
            ne = LatLon::new(ne.lat.max(p.lat), ne.lon.max(p.lon));
            lons.push(p.lon);
        }
        if let Some((west, east)) = antimeridian_window(&mut lons) {
            sw.lon = west;
            ne.lon = east;
        }
        Some((sw, ne))
    }
}

/// The shortest arc holding every longitude in `lons` (degrees in [−180, 180]) when it
/// crosses the antimeridian: `(west, east)` with `west` in [−180, 180] and `east` past 180.
/// `None` when the plain min–max box is already the shortest (the widest empty gap is the
/// one across ±180°), so every other map keeps its frame bit for bit.
fn antimeridian_window(lons: &mut [f64]) -> Option<(f64, f64)> {
    lons.sort_by(f64::total_cmp);
    let (&min, &max) = (lons.first()?, lons.last()?);
    let across = min + 360.0 - max;
    let (gap, after) = lons
        .windows(2)
        .map(|w| (w[1] - w[0], w[1]))
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    // Only a strictly wider gap inside moves the window: ties keep today's box.
    (gap > across).then_some((after, after + (360.0 - gap)))
}

/// The positions in time order, each with the limit that applied there and marked when it
/// ends a signal gap (the line breaks there).
fn track_points(track: &DayTrack, snapshot: &Snapshot) -> Vec<TrackPoint> {
    let gap_starts: Vec<i64> = track.gaps.iter().map(|g| g.start_utc).collect();
    let mut points = Vec::with_capacity(track.fixes.len());
    let mut previous_ts = None;
    for fix in &track.fixes {
        let p = fix.point();
        let after_gap = previous_ts.is_some_and(|t| gap_starts.contains(&t));
        let inside = snapshot
            .fences
            .iter()
            .filter(|f| f.fence.contains(p))
            .filter_map(|f| f.fence.speed_limit_kmh);
        points.push(TrackPoint {
            p,
            speed_kmh: fix.speed_kmh,
            limit_kmh: applicable_limit_kmh(track.vehicle.limit_kmh, inside),
            ts_utc: fix.ts_utc,
            after_gap,
        });
        previous_ts = Some(fix.ts_utc);
    }
    points
}

/// How close to a route stop a stop must be to take its name, metres.
const NAMED_WITHIN_M: f64 = 150.0;

/// The day's stops, their minutes cut to the day (an open one runs to "now"), long as
/// `alertas` says.
fn stop_marks(track: &DayTrack, snapshot: &Snapshot) -> Vec<StopMark> {
    let (zone, now) = (snapshot.zone(), snapshot.now_utc);
    track
        .working_stops()
        .map(|s| {
            let start = s.start_utc.max(track.from_utc);
            let end = s.end_utc.unwrap_or(now).min(track.to_utc);
            let p = LatLon::new(s.lat, s.lon);
            StopMark {
                p,
                minutes: (end - start).max(0) as f64 / 60.0,
                long: snapshot.is_long_stop(s),
                start: dates::clock_hm(zone, s.start_utc),
                place: snapshot.places.name_at(p, NAMED_WITHIN_M),
            }
        })
        .collect()
}

fn speeding_marks(track: &DayTrack, now: i64) -> Vec<SpeedingMark> {
    track
        .speeding
        .iter()
        .map(|e| {
            let to = e.end_utc.unwrap_or(now);
            // The label sits where the top speed was reported.
            let top = track
                .fixes
                .iter()
                .filter(|f| f.ts_utc >= e.start_utc && f.ts_utc <= to)
                .max_by(|a, b| a.speed_kmh.total_cmp(&b.speed_kmh))
                .map_or(LatLon::new(e.lat, e.lon), |f| f.point());
            SpeedingMark {
                p: top,
                max_kmh: e.max_kmh.unwrap_or(0.0),
                limit_kmh: e.limit_kmh.unwrap_or(track.vehicle.limit_kmh),
                from_utc: e.start_utc,
                to_utc: to,
            }
        })
        .collect()
}

/// Signal gaps from the last position before to the first after (an open one has no end).
fn gap_marks(track: &DayTrack, now: i64, zone: Tz) -> Vec<GapMark> {
    let position_at = |ts: i64| {
        track
            .fixes
            .binary_search_by_key(&ts, |f| f.ts_utc)
            .ok()
            .map(|i| track.fixes[i].point())
    };
    track
        .gaps
        .iter()
        .map(|g| {
            let minutes = ((g.end_utc.unwrap_or(now) - g.start_utc) as f64 / 60.0).round();
            GapMark {
                from: position_at(g.start_utc).unwrap_or(LatLon::new(g.lat, g.lon)),
                to: g.end_utc.and_then(position_at),
                label: match g.end_utc {
                    Some(_) => format!("sin señal {minutes:.0} min"),
                    None => format!("sin señal desde {}", dates::clock_hm(zone, g.start_utc)),
                },
            }
        })
        .collect()
}

/// Named route stops for the offline basemap, one label per place.
fn landmarks(snapshot: &Snapshot) -> Vec<(String, LatLon)> {
    let mut landmarks: Vec<(String, LatLon)> = Vec::new();
    for route in &snapshot.routes {
        // The first stop is the depot, which is a geofence with its own label.
        for (name, p) in route.stops.iter().skip(1) {
            // Routes share stops; one label per place.
            let name = name.replace('_', " ");
            if !landmarks.iter().any(|(n, _)| *n == name) {
                landmarks.push((name, *p));
            }
        }
    }
    landmarks
}

/// Driver, first departure and last arrival, stops, top speed, and the zone of the times.
fn subtitle(track: &DayTrack, stop_count: usize, zone: Tz) -> String {
    let hm = |t: i64| dates::clock_hm(zone, t);
    let day = &track.day;
    let mut subtitle = track.vehicle.driver.clone();
    if let (Some(a), Some(b)) = (day.first_move_utc, day.last_move_utc) {
        // A night shift across midnight: the engine clips its trips at the day's bounds,
        // which would read as a departure or an arrival at "00:00" (see `resumen_recorrido`).
        let (from, to) = crate::fleet::day_bounds(zone, track.date);
        let departure = if a <= from {
            "en ruta desde el día anterior".to_owned()
        } else {
            format!("salida {}", hm(a))
        };
        let arrival = if b >= to {
            "sigue en ruta al terminar el día".to_owned()
        } else {
            format!("última llegada {}", hm(b))
        };
        subtitle.push_str(&format!(" · {departure} · {arrival}"));
    }
    subtitle.push_str(&format!(
        " · {} paradas · vel. máx. {:.0} km/h · hora de {}",
        stop_count,
        day.max_speed_kmh,
        zone.name()
    ));
    subtitle
}
