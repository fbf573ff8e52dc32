//! The simulator as a fleet of trackers: every report sent to an OsmAnd-protocol server
//! (`flota recibir`, Traccar, any other) as the tracker would, at its delivery time.
//!
//! Owns the playback: one task per unit, each sending its reports in delivery order (late
//! and repeated deliveries as simulated) at `start + (delivered − first delivery) / speedup`,
//! many units at once over one connection pool (`plumbing::net::FleetHttp`: the only HTTP
//! client). A tracker keeps what it could not send in its memory and retries it before
//! anything newer: a failed send (no connection, timeout, 5xx, 429) is retried with a growing
//! pause (or the server's `Retry-After`), holding back the unit's later reports; a 4xx other
//! than 429 refuses that report for good (sending it again would not change the answer).
//! Nothing blocks forever: each request has a deadline, and whatever is still unsent
//! [`Options::grace`] after the last scheduled delivery is counted as undelivered. The
//! summary has the acknowledgement latencies (what the benchmark reads).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::plumbing::net::{FleetHttp, Get, NetError};
use crate::sim::Report;

/// Where and how fast.
#[derive(Debug, Clone)]
pub struct Options {
    pub url: String,
    /// Simulated seconds per real second (1: real time).
    pub speedup: f64,
    /// How long after the last scheduled delivery unsent reports are still retried.
    pub grace: Duration,
    /// Deadline of each request.
    pub timeout: Duration,
}

/// What the playback did.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub units: usize,
    pub reports: u64,
    /// Answered 2xx.
    pub acknowledged: u64,
    /// Refused by the server (4xx), with the first reason seen per status.
    pub refused: BTreeMap<u16, (u64, String)>,
    /// Never acknowledged (server down, full, or too slow until the end).
    pub undelivered: u64,
    /// Sends that failed and were tried again.
    pub retries: u64,
    /// Acknowledgement latencies, microseconds, sorted.
    pub latencies_us: Vec<u64>,
    pub elapsed: Duration,
    /// Why the last failed send failed.
    pub last_failure: Option<String>,
}

impl Summary {
    /// The `q` quantile of the acknowledgement latency (0 to 1), milliseconds.
    pub fn latency_ms(&self, q: f64) -> Option<f64> {
        if self.latencies_us.is_empty() {
            return None;
        }
        let index = ((self.latencies_us.len() - 1) as f64 * q).round() as usize;
        Some(self.latencies_us[index] as f64 / 1000.0)
    }

    /// Acknowledged reports per second of playback.
    pub fn rate(&self) -> f64 {
        self.acknowledged as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// One Spanish paragraph.
    pub fn lines(&self) -> String {
        let mut out = format!(
            "{} unidades: {} reportes enviados, {} confirmados, {} sin entregar, {} reintentos en {:.1} s ({:.0} por segundo)",
            self.units,
            self.reports,
            self.acknowledged,
            self.undelivered,
            self.retries,
            self.elapsed.as_secs_f64(),
            self.rate()
        );
        if let (Some(p50), Some(p99)) = (self.latency_ms(0.5), self.latency_ms(0.99)) {
            out.push_str(&format!("; confirmación p50 {p50:.1} ms, p99 {p99:.1} ms"));
        }
        for (status, (count, why)) in &self.refused {
            out.push_str(&format!(
                "\n{count} rechazados con HTTP {status}: {}",
                why.trim()
            ));
        }
        if self.undelivered > 0
            && let Some(why) = &self.last_failure
        {
            out.push_str(&format!("\núltimo fallo: {why}"));
        }
        out
    }
}

/// The query a tracker sends for `report`: Traccar Client's parameters, speed in knots with
/// enough decimals that 0.1 km/h survives the round trip.
pub fn query(report: &Report, plate: &str) -> Vec<(&'static str, String)> {
    let mut query = vec![
        ("id", plate.to_owned()),
        ("timestamp", report.ts_utc.to_string()),
        ("lat", format!("{:.6}", report.lat)),
        ("lon", format!("{:.6}", report.lon)),
        ("speed", format!("{:.4}", report.speed_kmh / 1.852)),
        ("bearing", format!("{:.1}", report.heading_deg)),
    ];
    if let Some(km) = report.odometer_km {
        query.push(("odometer", format!("{}", (km * 1000.0).round())));
    }
    query.push(("ignition", report.ignition.to_string()));
    if !report.valid {
        query.push(("valid", "false".into()));
    }
    query
}

/// What one unit's task reports back.
#[derive(Default)]
struct UnitResult {
    reports: u64,
    acknowledged: u64,
    refused: BTreeMap<u16, (u64, String)>,
    undelivered: u64,
    retries: u64,
    latencies_us: Vec<u64>,
    last_failure: Option<String>,
}

/// Plays `units` (plate and reports, any order) into `options.url`.
pub fn emit(units: Vec<(String, Vec<Report>)>, options: &Options) -> Result<Summary, NetError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|_| NetError::Setup)?;
    runtime.block_on(play(units, options))
}

async fn play(units: Vec<(String, Vec<Report>)>, options: &Options) -> Result<Summary, NetError> {
    let http = FleetHttp::new(options.timeout, options.timeout, units.len().clamp(1, 4096))?;
    let first = units
        .iter()
        .flat_map(|(_, r)| r.iter().map(|r| r.received_utc))
        .min()
        .unwrap_or(0);
    let last = units
        .iter()
        .flat_map(|(_, r)| r.iter().map(|r| r.received_utc))
        .max()
        .unwrap_or(0);
    let speedup = options.speedup.max(1e-6);
    let start = tokio::time::Instant::now();
    let due = move |delivered: i64| {
        start + Duration::from_secs_f64(((delivered - first) as f64 / speedup).max(0.0))
    };
    let deadline = due(last) + options.grace;
    let mut tasks = Vec::new();
    let count = units.len();
    for (plate, mut reports) in units {
        reports.sort_by_key(|r| (r.received_utc, r.ts_utc, r.sequence));
        let http = http.clone();
        let options = options.clone();
        tasks.push(tokio::spawn(async move {
            unit(&http, &options, &plate, &reports, due, deadline).await
        }));
    }
    let started = Instant::now();
    let mut summary = Summary {
        units: count,
        ..Summary::default()
    };
    for task in tasks {
        let Ok(r) = task.await else { continue };
        summary.reports += r.reports;
        summary.acknowledged += r.acknowledged;
        summary.undelivered += r.undelivered;
        summary.retries += r.retries;
        summary.latencies_us.extend(r.latencies_us);
        for (status, (n, why)) in r.refused {
            let entry = summary.refused.entry(status).or_insert((0, why));
            entry.0 += n;
        }
        if r.last_failure.is_some() {
            summary.last_failure = r.last_failure;
        }
    }
    summary.elapsed = started.elapsed();
    summary.latencies_us.sort_unstable();
    Ok(summary)
}

/// One tracker: its reports in order, each retried until acknowledged, refused or too late.
async fn unit(
    http: &FleetHttp,
    options: &Options,
    plate: &str,
    reports: &[Report],
    due: impl Fn(i64) -> tokio::time::Instant,
    deadline: tokio::time::Instant,
) -> UnitResult {
    let mut result = UnitResult {
        reports: reports.len() as u64,
        ..UnitResult::default()
    };
    for (index, report) in reports.iter().enumerate() {
        tokio::time::sleep_until(due(report.received_utc)).await;
        let mut request = Get::new(options.url.clone());
        for (name, value) in query(report, plate) {
            request = request.param(name, value);
        }
        let mut pause = Duration::from_millis(250);
        loop {
            let sent = Instant::now();
            let outcome = http.post(&request).await;
            let wait = match outcome {
                Ok(reply) if (200..300).contains(&reply.status) => {
                    result.acknowledged += 1;
                    result.latencies_us.push(sent.elapsed().as_micros() as u64);
                    break;
                }
                Ok(reply) if (400..500).contains(&reply.status) && reply.status != 429 => {
                    let entry = result.refused.entry(reply.status).or_insert_with(|| {
                        (
                            0,
                            String::from_utf8_lossy(&reply.body)
                                .chars()
                                .take(200)
                                .collect(),
                        )
                    });
                    entry.0 += 1;
                    break;
                }
                Ok(reply) => {
                    result.last_failure =
                        Some(format!("el servidor respondió HTTP {}", reply.status));
                    reply.retry_after.unwrap_or(pause)
                }
                Err(e) => {
                    result.last_failure = Some(e.to_string());
                    pause
                }
            };
            if tokio::time::Instant::now() + wait > deadline {
                result.undelivered += (reports.len() - index) as u64;
                return result;
            }
            result.retries += 1;
            tokio::time::sleep(wait).await;
            pause = (pause * 2).min(Duration::from_secs(10));
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::osmand;
    use crate::store::{Reading, StoredRow};

    /// What the receiver stores from the emitter's query is what the simulation stores from
    /// the report: the protocol's rounding loses nothing the database keeps.
    #[test]
    fn a_report_survives_the_round_trip() {
        // Simulated speeds are on the 0.1 km/h grid.
        for (i, speed_kmh) in [0.0, 0.1, 36.1, 59.9, 80.0, 123.4, 199.9]
            .into_iter()
            .enumerate()
        {
            let report = Report {
                ts_utc: 1_787_175_000 + i as i64,
                sequence: 0,
                received_utc: 1_787_175_000 + i as i64,
                lat: 14.612_345,
                lon: -90.498_765,
                speed_kmh,
                heading_deg: 359.6 - i as f64 * 47.3,
                ignition: i % 2 == 0,
                odometer_km: Some(12_345.678),
                valid: true,
            };
            let query: String = query(&report, "P-123BCD")
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("&");
            let decoded = osmand::decode(
                &osmand::Request {
                    query: Some(&query),
                    content_type: None,
                    body: b"",
                },
                &osmand::Options {
                    speed: osmand::SpeedUnit::Knots,
                    zone: chrono_tz::UTC,
                },
            )
            .unwrap();
            let received = StoredRow::encode(
                &Reading {
                    lat: decoded.lat,
                    lon: decoded.lon,
                    speed_kmh: decoded.speed_kmh,
                    heading_deg: decoded.heading_deg,
                    ignition: decoded.ignition.unwrap_or(true),
                    odometer_m: decoded.odometer_m,
                },
                0,
            );
            assert_eq!(decoded.ts_utc, Some(report.ts_utc));
            assert_eq!(received, StoredRow::from(&report), "{query}");
        }
    }
}
