//! Engine tests under a dense centre's GNSS noise: white noise, correlated drift and outlier
//! jumps on hand-made tracks, from a seeded generator (the engine never sees the simulator;
//! this is a few lines of its own). Each asserts what an operator would see.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

use super::*;
use crate::geometry::earth::offset_m;

/// 2026-08-13 06:00 in Guatemala.
const T0: i64 = 1_786_622_400;
const ORIGIN: LatLon = LatLon::new(14.60, -90.50);

/// What a tracker does over a stretch of time.
#[derive(Clone, Copy)]
pub(super) enum Leg {
    /// Drive east at `kmh` for `secs`.
    Drive { kmh: f64, secs: i64 },
    /// Stand for `secs`, the ignition as given.
    Stand { secs: i64, ignition: bool },
    /// Drive east at `kmh` for `secs` with no report (ignition on).
    Silent { kmh: f64, secs: i64 },
    /// Parked, asleep: no report for `secs`.
    Asleep { secs: i64 },
}

/// Noise: white σ per axis, an Ornstein–Uhlenbeck drift (σ, τ), jumps (probability, metres).
#[derive(Clone, Copy)]
pub(super) struct Noise {
    pub sigma_m: f64,
    pub drift_m: f64,
    pub tau_s: f64,
    pub jump_p: f64,
    pub jump_m: f64,
}

pub(super) const DENSE: Noise = Noise {
    sigma_m: 25.0,
    drift_m: 20.0,
    tau_s: 120.0,
    jump_p: 0.01,
    jump_m: 200.0,
};

/// Quiet noise: σ 5 m, no drift, no jumps.
const QUIET: Noise = Noise {
    sigma_m: 5.0,
    drift_m: 0.0,
    tau_s: 120.0,
    jump_p: 0.0,
    jump_m: 0.0,
};

/// The true track: (time, metres east, speed, ignition, reported), one sample every 15 s.
fn truth(legs: &[Leg]) -> Vec<(i64, f64, f64, bool, bool)> {
    let mut out = Vec::new();
    let (mut t, mut x) = (T0, 0.0f64);
    for leg in legs {
        let (kmh, secs, ignition, report) = match *leg {
            Leg::Drive { kmh, secs } => (kmh, secs, true, true),
            Leg::Stand { secs, ignition } => (0.0, secs, ignition, true),
            Leg::Silent { kmh, secs } => (kmh, secs, true, false),
            Leg::Asleep { secs } => (0.0, secs, false, false),
        };
        let end = t + secs;
        while t < end {
            out.push((t, x, kmh, ignition, report));
            x += kmh / 3.6 * 15.0;
            t += 15;
        }
    }
    out
}

/// The fixes a noisy tracker sends for the legs.
pub(super) fn noisy(legs: &[Leg], noise: Noise, seed: u64) -> Vec<Fix> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut normal = move || -> f64 { rng.sample(StandardNormal) };
    let mut jumps = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    let (mut de, mut dn, mut last_t) = (0.0f64, 0.0f64, None::<i64>);
    let mut fixes = Vec::new();
    for (t, x, kmh, ignition, report) in truth(legs) {
        let keep = last_t.map_or(0.0, |l| (-((t - l) as f64) / noise.tau_s).exp());
        let fresh = noise.drift_m * (1.0 - keep * keep).sqrt();
        de = de * keep + fresh * normal();
        dn = dn * keep + fresh * normal();
        last_t = Some(t);
        if !report {
            continue;
        }
        let (mut e, mut n) = (de + noise.sigma_m * normal(), dn + noise.sigma_m * normal());
        if jumps.random_bool(noise.jump_p) {
            let angle = jumps.random_range(0.0..std::f64::consts::TAU);
            e += noise.jump_m * angle.sin();
            n += noise.jump_m * angle.cos();
        }
        let p = offset_m(ORIGIN, x + e, n);
        fixes.push(Fix {
            ts_utc: t,
            lat: p.lat,
            lon: p.lon,
            speed_kmh: kmh,
            heading_deg: 90.0,
            ignition,
            odometer_m: Some(x.round() as i64),
        });
    }
    fixes
}

pub(super) fn run(fixes: &[Fix], fences: &[Geofence], now: i64) -> Analysis {
    let config = DetectionConfig::default();
    let ctx = Context {
        config: &config,
        fences,
        limit_kmh: 60.0,
        zone: chrono_tz::America::Guatemala,
    };
    analyze(&ctx, fixes.iter().copied(), now)
}

const fn drive(secs: i64) -> Leg {
    Leg::Drive { kmh: 36.0, secs }
}

const fn stand(secs: i64) -> Leg {
    Leg::Stand {
        secs,
        ignition: true,
    }
}

fn starts_of(legs: &[Leg]) -> Vec<i64> {
    let mut t = T0;
    legs.iter()
        .map(|leg| {
            let start = t;
            t += match *leg {
                Leg::Drive { secs, .. }
                | Leg::Stand { secs, .. }
                | Leg::Silent { secs, .. }
                | Leg::Asleep { secs } => secs,
            };
            start
        })
        .collect()
}

#[test]
fn drift_and_jumps_do_not_split_a_stop() {
    // Ten seeds of an hour and a half at a client under σ 25 m, 20 m drift and 1 % jumps.
    let legs = [drive(600), stand(5400), drive(600)];
    let starts = starts_of(&legs);
    for seed in 1..=10 {
        let fixes = noisy(&legs, DENSE, seed);
        let a = run(&fixes, &[], T0 + 6600);
        assert_eq!(a.stops.len(), 1, "seed {seed}: {:?}", a.stops);
        let stop = &a.stops[0];
        assert!((stop.start_utc - starts[1]).abs() <= 30, "seed {seed}");
        assert!(
            (stop.end_utc.unwrap() - starts[2]).abs() <= 30,
            "seed {seed}"
        );
        assert!(stop.is_long(&DetectionConfig::default(), T0 + 6600));
    }
}

#[test]
fn a_parked_night_is_one_stop_and_no_long_stop() {
    // Evening arrival, a few minutes of reports with the ignition off, the tracker asleep
    // all night, the morning's reports at the same place with the engine on, then away.
    let legs = [
        drive(600),
        Leg::Stand {
            secs: 180,
            ignition: false,
        },
        Leg::Asleep { secs: 9 * 3600 },
        stand(600),
        drive(600),
    ];
    let starts = starts_of(&legs);
    for seed in 1..=10 {
        let fixes = noisy(&legs, DENSE, seed);
        let a = run(&fixes, &[], starts[4] + 600);
        assert_eq!(a.stops.len(), 1, "seed {seed}: {:?}", a.stops);
        let stop = &a.stops[0];
        assert!((stop.start_utc - starts[1]).abs() <= 30, "seed {seed}");
        assert!(stop.went_off, "seed {seed}");
        assert!(!stop.is_long(&DetectionConfig::default(), starts[4] + 600));
    }
}

#[test]
fn a_unit_that_moved_during_a_silence_was_not_stopped_through_it() {
    // Stopped, then silent for 20 min while driving a loop that brings it back within 40 m
    // (the odometer says 6 km), then stopped again: two stops, neither across the silence.
    let there_and_back = [
        drive(600),
        stand(900),
        Leg::Silent {
            kmh: 36.0,
            secs: 600,
        },
        Leg::Silent {
            kmh: -36.0,
            secs: 596,
        },
        Leg::Stand {
            secs: 900,
            ignition: true,
        },
        Leg::Drive {
            kmh: -36.0,
            secs: 300,
        },
    ];
    let starts = starts_of(&there_and_back);
    let mut fixes = noisy(&there_and_back, DENSE, 3);
    // The odometer counts the way back too.
    let mut odometer = 0.0;
    let mut prev_x = None::<f64>;
    let mut readings = Vec::new();
    for (_, x, _, _, reported) in truth(&there_and_back) {
        odometer += prev_x.map_or(0.0, |p| (x - p).abs());
        prev_x = Some(x);
        if reported {
            readings.push(odometer);
        }
    }
    for (fix, reading) in fixes.iter_mut().zip(readings) {
        fix.odometer_m = Some(reading.round() as i64);
    }
    let a = run(&fixes, &[], starts[5] + 300);
    assert_eq!(a.stops.len(), 2, "{:?}", a.stops);
    assert!(a.stops[0].end_utc.unwrap() <= starts[2] + 300);
    assert!(a.stops[1].start_utc >= starts[2] + 900);
}

#[test]
fn a_unit_found_far_away_after_a_silence_was_not_stopped_through_it() {
    // Without an odometer: 3 km away after the silence.
    let legs = [
        drive(600),
        stand(900),
        Leg::Silent {
            kmh: 36.0,
            secs: 300,
        },
        stand(900),
        drive(300),
    ];
    let starts = starts_of(&legs);
    for seed in 1..=5 {
        let mut fixes = noisy(&legs, DENSE, seed);
        for fix in &mut fixes {
            fix.odometer_m = None;
        }
        let a = run(&fixes, &[], starts[4] + 300);
        assert_eq!(a.stops.len(), 2, "seed {seed}: {:?}", a.stops);
        assert!(a.stops[0].end_utc.unwrap() <= starts[2] + 150);
        assert!(a.stops[1].start_utc >= starts[2] + 150);
    }
}

#[test]
fn invalid_speeds_and_jumps_neither_split_stops_nor_make_speeding() {
    // A glitch of 400 km/h in the middle of a stop.
    let legs = [drive(600), stand(1800), drive(600)];
    let mut fixes = noisy(&legs, DENSE, 7);
    let glitch = fixes.iter().position(|f| f.ts_utc >= T0 + 1500).unwrap();
    fixes[glitch].speed_kmh = 400.0;
    let a = run(&fixes, &[], T0 + 3000);
    assert_eq!(a.stops.len(), 1, "{:?}", a.stops);
    assert!(a.overspeeds.is_empty(), "{:?}", a.overspeeds);

    // Cruising at 50 under a 60 limit, with jumps: two fixes in a row say 300 km/h.
    let cruise = [Leg::Drive {
        kmh: 50.0,
        secs: 1800,
    }];
    let mut fixes = noisy(&cruise, DENSE, 8);
    for fix in &mut fixes[40..42] {
        fix.speed_kmh = 300.0;
    }
    let a = run(&fixes, &[], T0 + 1800);
    assert!(a.overspeeds.is_empty(), "{:?}", a.overspeeds);

    // Five minutes at 90 km/h under that limit, one report saying 0: one episode, its
    // maximum the real one.
    let speeding = [
        Leg::Drive {
            kmh: 50.0,
            secs: 300,
        },
        Leg::Drive {
            kmh: 90.0,
            secs: 300,
        },
        Leg::Drive {
            kmh: 50.0,
            secs: 300,
        },
    ];
    let mut fixes = noisy(&speeding, DENSE, 9);
    let zero = fixes.iter().position(|f| f.ts_utc >= T0 + 450).unwrap();
    fixes[zero].speed_kmh = 0.0;
    let a = run(&fixes, &[], T0 + 900);
    assert_eq!(a.overspeeds.len(), 1, "{:?}", a.overspeeds);
    assert_eq!(a.overspeeds[0].max_kmh, 90.0);
    assert!(a.stops.is_empty(), "{:?}", a.stops);
}

#[test]
fn drift_at_a_fence_edge_does_not_flap() {
    // A depot whose west edge is 15 m past where the unit parks for an hour after driving
    // in from the west: its fixes fall on both sides for minutes at a time.
    let legs = [drive(600), stand(3600), drive(600)];
    let starts = starts_of(&legs);
    // Ten minutes at 10 m/s: it parks 6,000 m east; the depot spans 5,985–6,985 m.
    let parked_east_m = 6000.0;
    let fence = crate::geometry::geofence::Geofence::new(
        "deposito".into(),
        "bodega".into(),
        crate::geometry::geofence::Shape::Square {
            centre: offset_m(ORIGIN, parked_east_m + 485.0, 0.0),
            half_side_m: 500.0,
        },
        None,
    );
    for seed in 1..=10 {
        let fixes = noisy(&legs, DENSE, seed);
        let a = run(&fixes, std::slice::from_ref(&fence), starts[2] + 600);
        assert_eq!(a.visits.len(), 1, "seed {seed}: {:?}", a.visits);
        let visit = &a.visits[0];
        // It entered as it arrived (crossing the edge 15 m before halting) and left when it
        // drove off: back-dated crossings, within a minute.
        assert!(
            (visit.entry_utc - starts[1]).abs() <= 60,
            "seed {seed}: {}",
            visit.entry_utc - starts[1]
        );
        // It leaves through the east edge 985 m (98.5 s) after driving off.
        let exit = visit.exit_utc.unwrap() - (starts[2] + 98);
        assert!(exit.abs() <= 60, "seed {seed}: {exit}");
    }
}

/// A day in a 30 km/h zone at 93 % of the limit (28 km/h) under 2.5 km/h of Doppler noise,
/// with a real minute at 45 km/h every hour: every real episode and nothing else, whatever the
/// seed. With the tolerance alone (3 km/h, 1.2 σ) two readings in a row 2 σ high open false
/// episodes every few thousand fixes.
#[test]
fn doppler_noise_at_the_limit_is_not_speeding() {
    let mut legs = Vec::new();
    for _ in 0..24 {
        legs.push(Leg::Drive {
            kmh: 27.9,
            secs: 3540,
        });
        legs.push(Leg::Drive {
            kmh: 45.0,
            secs: 60,
        });
    }
    let config = DetectionConfig::default();
    let ctx = Context {
        config: &config,
        fences: &[],
        limit_kmh: 30.0,
        zone: chrono_tz::America::Guatemala,
    };
    for seed in 0..4 {
        let mut fixes = noisy(&legs, DENSE, seed);
        let mut doppler = ChaCha8Rng::seed_from_u64(seed ^ 0xd0);
        for fix in &mut fixes {
            let noise: f64 = doppler.sample(StandardNormal);
            fix.speed_kmh = (fix.speed_kmh + 2.5 * noise).max(0.0);
        }
        let a = analyze(&ctx, fixes.iter().copied(), T0 + 24 * 3600);
        let starts: Vec<i64> = a.overspeeds.iter().map(|o| o.start_utc - T0).collect();
        assert_eq!(a.overspeeds.len(), 24, "seed {seed}: {starts:?}");
        for (hour, o) in a.overspeeds.iter().enumerate() {
            let real = hour as i64 * 3600 + 3540;
            assert!(
                (o.start_utc - T0 - real).abs() <= 15,
                "seed {seed}: {starts:?}"
            );
        }
    }
}

/// A road that grazes slow zones (30 km/h circles whose edge passes 20 m from it) driven at
/// 40 km/h under σ 15 m and a 10 m drift: the fixes fall inside the zones again and again,
/// but the unit never is, so it never speeds. A zone's limit applies only to a fix inside it
/// by more than the position noise (`parada_radio_m`).
#[test]
fn noise_at_a_slow_zones_edge_is_not_speeding() {
    let noise = Noise {
        sigma_m: 15.0,
        drift_m: 10.0,
        tau_s: 120.0,
        jump_p: 0.0,
        jump_m: 0.0,
    };
    let legs = [Leg::Drive {
        kmh: 40.0,
        secs: 4 * 3600,
    }];
    // One zone every 2 km along the 160 km driven, its edge 20 m north of the road.
    let fences: Vec<Geofence> = (0..80)
        .map(|k| {
            Geofence::new(
                format!("zona {k}"),
                "zona_cliente".into(),
                crate::geometry::geofence::Shape::Circle {
                    centre: offset_m(ORIGIN, 1000.0 + 2000.0 * f64::from(k), 1020.0),
                    radius_m: 1000.0,
                },
                Some(30.0),
            )
        })
        .collect();
    let config = DetectionConfig::default();
    let ctx = Context {
        config: &config,
        fences: &fences,
        limit_kmh: 50.0,
        zone: chrono_tz::America::Guatemala,
    };
    for seed in 0..4 {
        let fixes = noisy(&legs, noise, seed);
        let a = analyze(&ctx, fixes.iter().copied(), T0 + 4 * 3600);
        assert!(a.overspeeds.is_empty(), "seed {seed}: {:?}", a.overspeeds);
    }
}

#[test]
fn correlated_drift_with_little_white_noise_does_not_split_a_long_stop() {
    // σ 5 m with 20 m of drift (τ 120 s): the short stops teach a small noise, then the
    // drift wanders tens of metres together for minutes during an hour and a half parked.
    let quiet = Noise {
        sigma_m: 5.0,
        drift_m: 20.0,
        tau_s: 120.0,
        jump_p: 0.0,
        jump_m: 0.0,
    };
    let legs = [
        drive(300),
        stand(240),
        drive(300),
        stand(300),
        drive(300),
        stand(5400),
        drive(600),
    ];
    let starts = starts_of(&legs);
    let now = starts[6] + 600;
    for seed in 100..=140 {
        let a = run(&noisy(&legs, quiet, seed), &[], now);
        let long: Vec<_> = a
            .stops
            .iter()
            .filter(|s| s.start_utc >= starts[5] - 60)
            .collect();
        assert_eq!(long.len(), 1, "seed {seed}: {long:?}");
        assert!((long[0].start_utc - starts[5]).abs() <= 30, "seed {seed}");
        assert!(
            (long[0].end_utc.unwrap() - starts[6]).abs() <= 30,
            "seed {seed}"
        );
    }
}

/// What an adaptive tracker sends for `legs`: every fix while driving, one record as it
/// halts (still rolling at 4.5 km/h), one an hour while it stands with the engine on, and
/// one as it sets off (7 km/h).
fn adaptive(legs: &[Leg], seed: u64) -> Vec<Fix> {
    adaptive_every(legs, seed, 3600)
}

/// [`adaptive`] with another period while standing, seconds.
fn adaptive_every(legs: &[Leg], seed: u64, standing_period_s: i64) -> Vec<Fix> {
    let quiet = QUIET;
    let starts = starts_of(legs);
    let leg_of = |t: i64| starts.iter().rposition(|s| *s <= t).unwrap_or(0);
    let mut out: Vec<Fix> = Vec::new();
    for mut fix in noisy(legs, quiet, seed) {
        let leg = leg_of(fix.ts_utc);
        let since = fix.ts_utc - starts[leg];
        match legs[leg] {
            Leg::Stand { .. } if since == 0 => fix.speed_kmh = 4.5,
            Leg::Stand { .. } if since % standing_period_s != 0 => continue,
            Leg::Drive { .. } if since == 0 && leg > 0 => fix.speed_kmh = 7.0,
            _ => {}
        }
        out.push(fix);
    }
    out
}

#[test]
fn a_tracker_that_sleeps_while_stopped_has_stops_and_no_signal_losses() {
    let legs = [
        drive(600),
        stand(1020),
        drive(600),
        stand(1200),
        drive(600),
        stand(4500),
        drive(600),
    ];
    let starts = starts_of(&legs);
    let now = starts[6] + 600;
    for seed in 200..=205 {
        let a = run(&adaptive(&legs, seed), &[], now);
        assert!(a.gaps.is_empty(), "seed {seed}: {:?}", a.gaps);
        let found: Vec<_> = a.stops.iter().map(|s| (s.start_utc, s.end_utc)).collect();
        assert_eq!(found.len(), 3, "seed {seed}: {found:?}");
        for (stop, leg) in found.iter().zip([1, 3, 5]) {
            assert!((stop.0 - starts[leg]).abs() <= 30, "seed {seed}: {found:?}");
            let end = stop.1.unwrap();
            assert!(
                (end - starts[leg + 1]).abs() <= 30,
                "seed {seed}: {found:?}"
            );
        }
    }
}

/// A tracker recording every five minutes, moving or not: its five-minute silences are its
/// cadence, not losses (one such unit had 107–130 "losses" in three days); twenty minutes
/// without a record while driving still is one.
#[test]
fn a_five_minute_trackers_cadence_is_no_signal_loss() {
    let quiet = QUIET;
    let every_five_minutes = |legs: &[Leg]| -> Vec<Fix> {
        noisy(legs, quiet, 21)
            .into_iter()
            .filter(|f| (f.ts_utc - T0) % 300 == 0)
            .collect()
    };
    let day = [
        drive(3600),
        stand(1800),
        drive(3600),
        stand(1800),
        drive(3600),
    ];
    let fixes = every_five_minutes(&day);
    let now = fixes.last().unwrap().ts_utc;
    let a = run(&fixes, &[], now);
    assert!(a.gaps.is_empty(), "{:?}", a.gaps);
    let lost = [
        drive(3600),
        stand(1800),
        drive(1800),
        Leg::Silent {
            kmh: 36.0,
            secs: 1200,
        },
        drive(1800),
    ];
    let fixes = every_five_minutes(&lost);
    let a = run(&fixes, &[], fixes.last().unwrap().ts_utc);
    let found: Vec<_> = a.gaps.iter().map(|g| (g.from_utc, g.to_utc)).collect();
    let silent = starts_of(&lost)[3];
    assert_eq!(found, vec![(silent - 300, Some(silent + 1200))]);
}

/// An adaptive tracker records once an hour while the unit stands, engine on or off, and
/// beats hourly through the night. Halted with the engine on and silent since: asleep for
/// forty minutes, but three hours is past anything its cadence explains — the signal was
/// lost (a `comercial` unit at a depot under a loss still going on at "now" was shown
/// stopped instead).
#[test]
fn an_adaptive_tracker_silent_hours_after_a_halt_lost_its_signal() {
    let legs = [
        drive(600),
        stand(1200),
        drive(600),
        Leg::Stand {
            secs: 8 * 3600,
            ignition: false,
        },
        drive(600),
        stand(1200),
        drive(600),
        stand(4 * 3600),
    ];
    let starts = starts_of(&legs);
    let halt = starts[7];
    let until_halt: Vec<Fix> = adaptive(&legs, 7)
        .into_iter()
        .filter(|f| f.ts_utc <= halt)
        .collect();
    let asleep = run(&until_halt, &[], halt + 2400);
    assert!(asleep.gaps.is_empty(), "{:?}", asleep.gaps);
    let lost = run(&until_halt, &[], halt + 3 * 3600);
    let found: Vec<_> = lost.gaps.iter().map(|g| (g.from_utc, g.to_utc)).collect();
    assert_eq!(found, vec![(halt, None)]);
}

/// An adaptive tracker set to record every ten minutes while the unit stands: a record due
/// and not made within the loss threshold after it is a signal loss. The allowance was twice
/// the cadence, so a loss that hid one record at a delivery (a 20-minute silence) passed.
#[test]
fn a_record_missed_at_a_stop_beyond_the_threshold_is_a_signal_loss() {
    let legs = [
        drive(600),
        stand(3000),
        drive(600),
        stand(3000),
        drive(600),
        stand(3000),
        drive(600),
    ];
    let starts = starts_of(&legs);
    let now = starts[6] + 600;
    for seed in 40..=43 {
        let fixes = adaptive_every(&legs, seed, 600);
        let a = run(&fixes, &[], now);
        assert!(a.gaps.is_empty(), "seed {seed}: {:?}", a.gaps);
        let missed = starts[3] + 1200;
        let lost: Vec<Fix> = fixes.into_iter().filter(|f| f.ts_utc != missed).collect();
        let a = run(&lost, &[], now);
        let found: Vec<_> = a.gaps.iter().map(|g| (g.from_utc, g.to_utc)).collect();
        assert_eq!(
            found,
            vec![(missed - 600, Some(missed + 600))],
            "seed {seed}"
        );
    }
}

#[test]
fn a_departure_at_walking_pace_is_dated_by_its_speed_not_the_drift() {
    // An adaptive tracker records the halt and then the departure, at walking pace, twenty
    // minutes later: by then the correlated drift has moved the positions 80 m. The distance
    // from the stop's centre is the drift, not a drive (at 7 km/h it would be 40 s of one).
    let legs = [drive(600), stand(1020), drive(600), stand(1200), drive(600)];
    let starts = starts_of(&legs);
    for seed in 310..=315 {
        let mut fixes = adaptive(&legs, seed);
        let departure = fixes.iter().position(|f| f.ts_utc == starts[4]).unwrap();
        let drifted = offset_m(fixes[departure].point(), 0.0, 80.0);
        (fixes[departure].lat, fixes[departure].lon) = (drifted.lat, drifted.lon);
        let a = run(&fixes, &[], starts[4] + 600);
        let stop = a
            .stops
            .iter()
            .find(|s| (s.start_utc - starts[3]).abs() <= 30)
            .unwrap_or_else(|| panic!("seed {seed}: {:?}", a.stops));
        let end = stop.end_utc.unwrap();
        assert!(
            (end - starts[4]).abs() <= 10,
            "seed {seed}: {end} {}",
            starts[4]
        );
    }
}

#[test]
fn a_tracker_that_reports_while_stopped_and_falls_silent_there_lost_its_signal() {
    // The same stops from a tracker reporting every 15 s, silent for ten minutes during one.
    let silent_parked = Leg::Silent {
        kmh: 0.0,
        secs: 600,
    };
    let legs = [
        drive(600),
        stand(600),
        drive(600),
        stand(300),
        silent_parked,
        stand(300),
        drive(600),
    ];
    let starts = starts_of(&legs);
    let a = run(&noisy(&legs, DENSE, 7), &[], starts[6] + 600);
    assert_eq!(a.gaps.len(), 1, "{:?}", a.gaps);
    assert!((a.gaps[0].from_utc - starts[4]).abs() <= 15);
    assert_eq!(a.gaps[0].to_utc, Some(starts[5]));
}

#[test]
fn a_flickered_off_before_a_silence_the_unit_drove_through_is_a_signal_loss() {
    // A tracker reporting every 15 s reads "off" once, then loses its signal for ten minutes
    // while the unit drives on: found on, its odometer 6 km on, it was no engine switched off.
    let legs = [
        drive(600),
        stand(600),
        drive(300),
        Leg::Silent {
            kmh: 36.0,
            secs: 600,
        },
        drive(600),
    ];
    let starts = starts_of(&legs);
    let mut fixes = noisy(&legs, DENSE, 21);
    let last = fixes.iter().rposition(|f| f.ts_utc < starts[3]).unwrap();
    fixes[last].ignition = false;
    let a = run(&fixes, &[], starts[4] + 600);
    let found: Vec<_> = a.gaps.iter().map(|g| (g.from_utc, g.to_utc)).collect();
    assert_eq!(found, vec![(fixes[last].ts_utc, Some(starts[4]))]);
    // Switched off and found the next morning where it was parked: asleep, no loss.
    let parked = [
        drive(600),
        stand(600),
        Leg::Asleep { secs: 3 * 3600 },
        stand(300),
        drive(300),
    ];
    let starts = starts_of(&parked);
    let mut fixes = noisy(&parked, DENSE, 22);
    let last = fixes.iter().rposition(|f| f.ts_utc < starts[2]).unwrap();
    fixes[last].ignition = false;
    assert_eq!(run(&fixes, &[], starts[4] + 300).gaps, vec![]);
}

/// A cheap tracker keeps reporting "off" for three minutes after each shutdown before it
/// sleeps. One day at the depot it reads "off" once with the engine on, and its signal is lost
/// for 13 minutes: found on in place afterwards. That lone "off" straight into a silence is
/// not how this unit shuts down, so it flickered and the silence is a signal loss
/// (`economico` in Madrid, seed 20, at every grid point). A tracker whose shutdowns fall
/// silent at once makes the same data a short shutdown, no loss.
#[test]
fn a_lone_off_before_a_silence_is_a_loss_when_the_units_shutdowns_keep_reporting() {
    let days = |tail_secs: i64| {
        let shutdown = [
            Leg::Stand {
                secs: tail_secs,
                ignition: false,
            },
            Leg::Asleep { secs: 10 * 3600 },
        ];
        let mut legs = Vec::new();
        for _ in 0..2 {
            legs.extend([stand(300), drive(600), stand(900), drive(600), stand(300)]);
            legs.extend(shutdown);
        }
        legs.extend([
            stand(300),
            drive(600),
            stand(300),
            Leg::Silent {
                kmh: 0.0,
                secs: 13 * 60,
            },
            stand(300),
            drive(600),
        ]);
        legs
    };
    for (tail_secs, seed) in [(180, 31), (15, 32)] {
        let legs = days(tail_secs);
        let starts = starts_of(&legs);
        let silent = legs.len() - 3;
        let mut fixes = noisy(&legs, DENSE, seed);
        let flicker = fixes
            .iter()
            .rposition(|f| f.ts_utc < starts[silent])
            .unwrap();
        fixes[flicker].ignition = false;
        let a = run(&fixes, &[], starts[silent + 2] + 600);
        let found: Vec<_> = a.gaps.iter().map(|g| (g.from_utc, g.to_utc)).collect();
        if tail_secs > 15 {
            assert_eq!(
                found,
                vec![(fixes[flicker].ts_utc, Some(starts[silent + 1]))]
            );
        } else {
            assert_eq!(
                found,
                vec![],
                "shutdowns that sleep at once: a short shutdown"
            );
        }
    }
}

/// The same tracker (three minutes of "off" reports after each switch-off) then beats every
/// 30 min through the night, and one heartbeat reads "on". The next heartbeat is an "off" after
/// an "on" with a silence to the morning's switch-on, but that "on" came half an hour earlier:
/// no witness that the unit was running, so no lone "off" and no loss (a rule without that
/// check called such nights 19-minute losses on `economico`, Madrid seed 22 and a Guatemala
/// scenario's seed 29).
#[test]
fn a_heartbeat_flickered_on_makes_the_next_one_no_lone_off() {
    const NIGHT_S: i64 = 10 * 3600;
    let day = [stand(300), drive(600), stand(900), drive(600), stand(300)];
    let mut legs = Vec::new();
    for _ in 0..3 {
        legs.extend(day);
        legs.push(Leg::Stand {
            secs: NIGHT_S,
            ignition: false,
        });
    }
    legs.extend(day);
    let starts = starts_of(&legs);
    let nights: Vec<i64> = (0..3).map(|d| starts[d * 6 + 5]).collect();
    // Three minutes of "off" reports, then a heartbeat every 30 min.
    let kept = |f: &Fix| {
        f.ignition
            || nights.iter().any(|night| {
                let since = f.ts_utc - night;
                (0..NIGHT_S).contains(&since) && (since < 180 || since % 1800 == 0)
            })
    };
    let mut fixes: Vec<Fix> = noisy(&legs, DENSE, 41).into_iter().filter(kept).collect();
    let last_night_end = nights[2] + NIGHT_S;
    let flicker = fixes
        .iter()
        .rposition(|f| f.ts_utc < last_night_end - 1800 && !f.ignition)
        .unwrap();
    assert_eq!(fixes[flicker].ts_utc, last_night_end - 2 * 1800);
    fixes[flicker].ignition = true;
    // "Now" is the last report: the morning after is all reported.
    let now = fixes.last().unwrap().ts_utc;
    let a = run(&fixes, &[], now);
    assert!(a.gaps.is_empty(), "{:?}", a.gaps);
}

#[test]
fn a_heartbeat_that_flickers_on_does_not_make_the_night_a_signal_loss() {
    // A client stop with the engine on (reports every 15 s), then parked with the engine off,
    // one heartbeat every 30 min; one of them reads "on".
    let legs = [
        drive(600),
        stand(600),
        drive(600),
        Leg::Stand {
            secs: 4 * 3600,
            ignition: false,
        },
        drive(600),
    ];
    let starts = starts_of(&legs);
    let mut fixes: Vec<Fix> = noisy(&legs, DENSE, 11)
        .into_iter()
        .filter(|f| f.ignition || (f.ts_utc - starts[3]) % 1800 == 0)
        .collect();
    let flicker = fixes
        .iter()
        .position(|f| f.ts_utc == starts[3] + 2 * 1800)
        .unwrap();
    fixes[flicker].ignition = true;
    let a = run(&fixes, &[], starts[4] + 600);
    assert!(a.gaps.is_empty(), "{:?}", a.gaps);
}

/// The last heartbeat of the night reads "on" and the engine really starts ten minutes later,
/// the unit still where it slept: the tracker slept on until then, no signal loss (the
/// `rastreadores` scenario, seed 101: a 5.5-min "loss" at a depot before the shift). Had a
/// heartbeat due in that silence gone missing, the silence would be one.
#[test]
fn a_flickered_last_heartbeat_before_the_morning_start_is_no_signal_loss() {
    let legs = [
        drive(600),
        stand(600),
        drive(600),
        Leg::Stand {
            secs: 4 * 3600 + 600,
            ignition: false,
        },
        stand(600),
        drive(600),
    ];
    let starts = starts_of(&legs);
    let night = starts[3];
    let heartbeat =
        |f: &Fix| (night..starts[4]).contains(&f.ts_utc) && (f.ts_utc - night) % 1800 == 0;
    let mut fixes: Vec<Fix> = noisy(&legs, DENSE, 13)
        .into_iter()
        .filter(|f| f.ignition || heartbeat(f))
        .collect();
    let last = fixes.iter().rposition(heartbeat).unwrap();
    assert_eq!(fixes[last].ts_utc, night + 8 * 1800);
    fixes[last].ignition = true;
    let now = starts[5] + 600;
    let a = run(&fixes, &[], now);
    assert!(a.gaps.is_empty(), "{:?}", a.gaps);
    // The heartbeat before reads "on" and the last one never came: the silence spans a
    // heartbeat that was due, a loss.
    fixes[last].ignition = false;
    fixes[last - 1].ignition = true;
    fixes.remove(last);
    let a = run(&fixes, &[], now);
    assert_eq!(a.gaps.len(), 1, "{:?}", a.gaps);
    assert_eq!(a.gaps[0].from_utc, night + 7 * 1800);
}

#[test]
fn a_tracker_that_sleeps_while_stopped_shows_the_unit_stopped_now() {
    // Its last record is the braking; forty minutes later ("now") it is still silent.
    let legs = [
        drive(600),
        stand(1200),
        drive(600),
        stand(1500),
        drive(600),
        stand(2400),
    ];
    let starts = starts_of(&legs);
    let now = starts[5] + 2400;
    let a = run(&adaptive(&legs, 300), &[], now);
    assert!(a.gaps.is_empty(), "{:?}", a.gaps);
    let last = a.stops.last().unwrap();
    assert_eq!(last.end_utc, None, "{:?}", a.stops);
    assert!((last.start_utc - starts[5]).abs() <= 30, "{:?}", a.stops);
}

#[test]
fn a_lone_ignition_flicker_does_not_make_a_long_stop_the_days_parking() {
    // An hour at a client with the engine on; one report in the middle reads "off".
    let legs = [drive(600), stand(3600), drive(600)];
    let starts = starts_of(&legs);
    let mut fixes = noisy(&legs, DENSE, 12);
    let middle = fixes
        .iter()
        .position(|f| f.ts_utc == starts[1] + 1800)
        .unwrap();
    fixes[middle].ignition = false;
    let now = starts[2] + 600;
    let a = run(&fixes, &[], now);
    assert_eq!(a.stops.len(), 1, "{:?}", a.stops);
    assert!(!a.stops[0].went_off, "{:?}", a.stops);
    assert!(a.stops[0].is_long(&DetectionConfig::default(), now));
}

#[test]
fn a_parked_night_found_drifted_in_the_morning_is_one_stop_when_the_odometer_stood_still() {
    // Evening arrival, asleep all night; the morning's fixes land 80 m off (the drift of the
    // moment) while the odometer has not moved a metre.
    let quiet = QUIET;
    let legs = [
        drive(600),
        Leg::Stand {
            secs: 300,
            ignition: false,
        },
        Leg::Asleep { secs: 8 * 3600 },
        stand(300),
        drive(600),
    ];
    let starts = starts_of(&legs);
    let mut fixes = noisy(&legs, quiet, 13);
    for fix in fixes
        .iter_mut()
        .filter(|f| (starts[3]..starts[4]).contains(&f.ts_utc))
    {
        let moved = offset_m(fix.point(), 0.0, 80.0);
        (fix.lat, fix.lon) = (moved.lat, moved.lon);
    }
    let a = run(&fixes, &[], starts[4] + 600);
    assert_eq!(a.stops.len(), 1, "{:?}", a.stops);
    assert!((a.stops[0].start_utc - starts[1]).abs() <= 30);
    assert!((a.stops[0].end_utc.unwrap() - starts[4]).abs() <= 30);
}

/// The same night on a tracker without an odometer (a phone): the morning's fixes 80 m off
/// read as the unit found elsewhere, and a stop from the middle of the night. It began while
/// the tracker slept with the ignition off: the day's parking, not an alert.
#[test]
fn a_stop_begun_while_the_tracker_slept_with_the_ignition_off_is_no_long_stop() {
    let quiet = QUIET;
    let legs = [
        drive(600),
        Leg::Stand {
            secs: 300,
            ignition: false,
        },
        Leg::Asleep { secs: 8 * 3600 },
        stand(300),
        drive(600),
    ];
    let starts = starts_of(&legs);
    let mut fixes = noisy(&legs, quiet, 13);
    for fix in fixes.iter_mut() {
        fix.odometer_m = None;
        if (starts[3]..starts[4]).contains(&fix.ts_utc) {
            let moved = offset_m(fix.point(), 0.0, 80.0);
            (fix.lat, fix.lon) = (moved.lat, moved.lon);
        }
    }
    let now = starts[4] + 600;
    let a = run(&fixes, &[], now);
    let config = DetectionConfig::default();
    let long: Vec<&Stop> = a.stops.iter().filter(|s| s.is_long(&config, now)).collect();
    assert_eq!(long, Vec::<&Stop>::new(), "{:?}", a.stops);
}

/// Stopped with the engine on for an hour at "now", and the last report, at "now", reads
/// "off": nothing confirmed it yet (no second report, no silence), so the stop is still a
/// long stop going on; once a silence follows it is the day's parking.
#[test]
fn a_lone_off_as_the_last_report_is_no_day_end_until_a_silence_follows() {
    let quiet = QUIET;
    let legs = [drive(600), stand(3600)];
    let starts = starts_of(&legs);
    let mut fixes = noisy(&legs, quiet, 12);
    let last = fixes.len() - 1;
    fixes[last].ignition = false;
    let config = DetectionConfig::default();
    let now = fixes[last].ts_utc;
    let a = run(&fixes, &[], now);
    assert_eq!(a.stops.len(), 1, "{:?}", a.stops);
    assert!(a.stops[0].is_long(&config, now), "{:?}", a.stops);
    let later = now + 600;
    let b = run(&fixes, &[], later);
    assert!(!b.stops[0].is_long(&config, later), "{:?}", b.stops);
    assert!(starts[1] < now);
}

/// The day ends at the depot: the halt's report with the engine on, and the ignition-off
/// report 200 m away (a jump), then the tracker sleeps. That "off" is the stop's all the same:
/// no long stop going on at "now".
#[test]
fn an_off_report_that_jumped_away_still_ends_the_day() {
    let quiet = QUIET;
    let legs = [drive(600), stand(300)];
    let mut fixes = noisy(&legs, quiet, 5);
    let last = fixes.len() - 1;
    let jumped = offset_m(fixes[last].point(), 200.0, 0.0);
    (fixes[last].lat, fixes[last].lon) = (jumped.lat, jumped.lon);
    fixes[last].ignition = false;
    let now = fixes[last].ts_utc + 45 * 60;
    let a = run(&fixes, &[], now);
    let config = DetectionConfig::default();
    assert_eq!(a.stops.len(), 1, "{:?}", a.stops);
    assert!(!a.stops[0].is_long(&config, now), "{:?}", a.stops);
}

/// An adaptive tracker's signal lost at a 15-minute delivery: the unit drove 1.5 km to the
/// depot and stood there half an hour, and the first record after is the depot departure at
/// walking pace. It stood at the depot before setting off: the delivery ended in the middle of
/// the silence, not at that departure (a 50-minute "long stop" at the client).
#[test]
fn a_unit_found_setting_off_elsewhere_after_a_silence_left_in_its_middle() {
    let legs = [drive(600), stand(900)];
    let starts = starts_of(&legs);
    let mut fixes = noisy(&legs, DENSE, 3);
    let last = *fixes.last().unwrap();
    let set_off = offset_m(last.point(), 1500.0, 0.0);
    fixes.push(Fix {
        ts_utc: last.ts_utc + 52 * 60,
        lat: set_off.lat,
        lon: set_off.lon,
        speed_kmh: 9.6,
        heading_deg: 90.0,
        ignition: true,
        odometer_m: last.odometer_m.map(|m| m + 1509),
    });
    let now = last.ts_utc + 60 * 60;
    let a = run(&fixes, &[], now);
    let config = DetectionConfig::default();
    assert!(!a.stops.is_empty(), "{:?}", a.stops);
    assert!(
        a.stops.iter().all(|s| !s.is_long(&config, now)),
        "{:?}",
        a.stops
    );
    assert!(
        (a.stops[0].start_utc - starts[1]).abs() <= 30,
        "{:?}",
        a.stops
    );
}

#[test]
fn a_phones_invalid_zero_while_driving_is_caught_by_the_fix_after_it() {
    // A delivery (ten minutes: the unit's noise is learned there); the unit sets off at
    // 8 km/h and the phone's next record says 0 while it drives on at 36. That zero, 33 m
    // from the stop's centre, held the stop open until the fix after it: it ended 16 s late.
    let legs = [
        drive(300),
        stand(600),
        Leg::Drive { kmh: 8.0, secs: 15 },
        drive(600),
    ];
    let starts = starts_of(&legs);
    let mut fixes = noisy(&legs, QUIET, 11);
    let zero = fixes.iter().position(|f| f.ts_utc == starts[3]).unwrap();
    fixes[zero].speed_kmh = 0.0;
    let a = run(&fixes, &[], starts[3] + 600);
    assert_eq!(a.stops.len(), 1, "{:?}", a.stops);
    let end = a.stops[0].end_utc.unwrap();
    assert!((end - starts[2]).abs() <= 5, "{end} for {}", starts[2]);

    // After a delivery, thirty minutes at 36 km/h, every eighth record 0: the drive's GPS
    // kilometres (the zeros cut the speeds' trapezoid on both sides of each).
    let cruise = [stand(600), drive(1800)];
    let mut fixes = noisy(&cruise, QUIET, 12);
    for fix in fixes.iter_mut().skip(44).step_by(8) {
        fix.speed_kmh = 0.0;
    }
    let a = run(&fixes, &[], T0 + 2400);
    let driven_km = 10.0 * (1800.0 - 15.0) / 1000.0;
    let km = a.days[0].km_gps;
    assert!(
        (km / driven_km - 1.0).abs() < 0.01,
        "{km} km of {driven_km}"
    );
    assert_eq!(a.stops.len(), 1, "{:?}", a.stops);
}

/// An adaptive tracker (a record every 500 m or 30°, every 120 s at most while moving, every
/// 10 min while stopped) recorded a unit slowing to 6 km/h, then nothing while it stood ten
/// minutes at a client, then setting off at 12 km/h, then 19 s later halted at a light 160 m
/// on (odometer +4 m over the stand, +161 m to the light). The setting-off fix dates the
/// departure: the delivery is a stop from the slow fix to it. It was read as a move in the
/// silence's middle (the odometer's jump to the light), the delivery dropped as unseen and a
/// stop from the silence's middle to well after the light reported instead.
#[test]
fn a_setting_off_fix_before_a_halt_dates_the_departure_after_a_silence() {
    let fix = |t: i64, east_m: f64, kmh: f64, odometer_m: i64| {
        let p = offset_m(ORIGIN, east_m, 90.0);
        Fix {
            ts_utc: T0 + t,
            lat: p.lat,
            lon: p.lon,
            speed_kmh: kmh,
            heading_deg: 90.0,
            ignition: true,
            odometer_m: Some(odometer_m),
        }
    };
    let mut fixes: Vec<Fix> = (0..10)
        .map(|i| fix(i * 45, i as f64 * 500.0, 40.0, i * 500))
        .collect();
    fixes.push(fix(450, 4560.0, 5.8, 4560));
    fixes.push(fix(1014, 4564.0, 11.7, 4564));
    fixes.push(fix(1033, 4725.0, 0.0, 4725));
    fixes.push(fix(1060, 4735.0, 20.0, 4735));
    fixes.extend((1..6).map(|i| {
        fix(
            1060 + i * 45,
            4735.0 + i as f64 * 500.0,
            40.0,
            4735 + i * 500,
        )
    }));
    let a = run(&fixes, &[], T0 + 1600);
    let delivery: Vec<_> = a.stops.iter().filter(|s| s.start_utc < T0 + 1014).collect();
    assert_eq!(delivery.len(), 1, "{:?}", a.stops);
    let (start, end) = (
        delivery[0].start_utc - T0,
        delivery[0].end_utc.unwrap() - T0,
    );
    assert!(
        (450..=470).contains(&start),
        "starts at {start}: {:?}",
        a.stops
    );
    assert!((1000..=1014).contains(&end), "ends at {end}: {:?}", a.stops);
}

/// An adaptive tracker's halt record read 0 km/h but its position jumped a kilometre (σ 35 m
/// with 500 m jumps, Kolkata): the speed check took the zero for invalid and put back the
/// speed before it, and the 20 minutes the tracker then slept at the stop (once an hour while
/// standing) were judged as a silence while moving, a false signal loss. The odometer, which
/// did not advance through the silence, says the unit stood.
#[test]
fn a_halt_whose_position_jumped_is_still_a_halt_to_an_odometer_that_stood() {
    let legs = [drive(600), stand(1200), drive(600)];
    let starts = starts_of(&legs);
    let mut fixes = adaptive(&legs, 11);
    let halt = fixes
        .iter_mut()
        .find(|f| f.ts_utc == starts[1])
        .expect("a record at the halt");
    halt.speed_kmh = 0.0;
    let jumped = offset_m(halt.point(), 0.0, 1000.0);
    (halt.lat, halt.lon) = (jumped.lat, jumped.lon);
    let a = run(&fixes, &[], starts[2] + 600);
    assert!(a.gaps.is_empty(), "{:?}", a.gaps);
}
