//! A unit's day as GPX 1.1, for GPS tools and route planners.
//!
//! Owns the document: the track (one segment per stretch between signal losses) with UTC
//! times, and the stops as waypoints. Speed and heading go in the Garmin
//! TrackPointExtension v2 that most tools read, since GPX 1.1 has no speed element.

use crate::fleet::{DayTrack, Snapshot, dates};
use crate::geometry::earth::LatLon;

/// XML text with the five special characters escaped.
fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

fn utc(ts: i64) -> String {
    chrono::DateTime::from_timestamp(ts, 0)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The day as GPX 1.1: stops as waypoints, the track split at signal losses, UTC times, and
/// speed (m/s) and course in Garmin's TrackPointExtension v2.
pub fn gpx(track: &DayTrack, snapshot: &Snapshot) -> String {
    use std::fmt::Write;
    let name = format!("{} {}", track.vehicle.plate, track.date);
    let mut out = String::with_capacity(track.fixes.len() * 220 + 1024);
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(
        "<gpx version=\"1.1\" creator=\"flota\" xmlns=\"http://www.topografix.com/GPX/1/1\" \
         xmlns:gpxtpx=\"http://www.garmin.com/xmlschemas/TrackPointExtension/v2\" \
         xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
         xsi:schemaLocation=\"http://www.topografix.com/GPX/1/1 http://www.topografix.com/GPX/1/1/gpx.xsd\">\n",
    );
    let _ = writeln!(
        out,
        "  <metadata>\n    <name>{}</name>\n    <desc>{}</desc>\n    <time>{}</time>\n  </metadata>",
        xml(&name),
        xml(&format!(
            "{} · {} · {:.1} km · hora local {}",
            track.vehicle.driver,
            dates::long_es(track.date),
            track.day.km,
            track.zone.name()
        )),
        utc(track.fixes[0].ts_utc)
    );
    let zone = track.zone;
    let now = snapshot.now_utc;
    for stop in track.working_stops() {
        let minutes = (stop.end_utc.unwrap_or(now) - stop.start_utc) as f64 / 60.0;
        let label = format!(
            "Parada {} ({:.0} min){}",
            dates::clock_hm(zone, stop.start_utc),
            minutes,
            if snapshot.is_long_stop(stop) {
                ", prolongada"
            } else {
                ""
            }
        );
        let _ = writeln!(
            out,
            "  <wpt lat=\"{:.6}\" lon=\"{:.6}\">\n    <time>{}</time>\n    <name>{}</name>\n    <desc>{}</desc>\n    <type>parada</type>\n  </wpt>",
            stop.lat,
            stop.lon,
            utc(stop.start_utc),
            xml(&label),
            xml(&snapshot.places.phrase(LatLon::new(stop.lat, stop.lon)))
        );
    }
    let _ = writeln!(
        out,
        "  <trk>\n    <name>{}</name>\n    <trkseg>",
        xml(&name)
    );
    let gap_starts: Vec<i64> = track.gaps.iter().map(|g| g.start_utc).collect();
    for (i, fix) in track.fixes.iter().enumerate() {
        if i > 0 && gap_starts.contains(&track.fixes[i - 1].ts_utc) {
            out.push_str("    </trkseg>\n    <trkseg>\n");
        }
        let _ = writeln!(
            out,
            "      <trkpt lat=\"{:.6}\" lon=\"{:.6}\"><time>{}</time><extensions><gpxtpx:TrackPointExtension><gpxtpx:speed>{:.2}</gpxtpx:speed><gpxtpx:course>{:.0}</gpxtpx:course></gpxtpx:TrackPointExtension></extensions></trkpt>",
            fix.lat,
            fix.lon,
            utc(fix.ts_utc),
            fix.speed_kmh / 3.6,
            fix.heading_deg
        );
    }
    out.push_str("    </trkseg>\n  </trk>\n</gpx>\n");
    out
}
