//! Engine tests on hand-made tracks: each builds fixes with a tiny DSL and checks one
//! detector's answer.

use super::*;
use crate::geometry::earth::offset_m;
use crate::geometry::geofence::Shape;

/// 2026-08-13 12:00 in Guatemala: every track stays within one local day.
const T0: i64 = 1_786_644_000;
const ORIGIN: LatLon = LatLon::new(14.60, -90.50);

/// A track written as segments: drive east at `kmh` for `secs`, or stand for `secs`.
#[derive(Clone, Copy)]
enum Seg {
    Drive {
        kmh: f64,
        secs: i64,
    },
    Stand {
        secs: i64,
    },
    /// No reports for `secs` while driving at `kmh`.
    Silent {
        kmh: f64,
        secs: i64,
    },
}

/// Fixes every 15 s along the segments; position noise added by `jitter(i)` metres east.
fn track(segments: &[Seg], jitter: impl Fn(usize) -> f64) -> Vec<Fix> {
    let mut fixes = Vec::new();
    let (mut t, mut x_m, mut v_prev) = (T0, 0.0f64, 0.0f64);
    for seg in segments {
        let (kmh, secs, report) = match *seg {
            Seg::Drive { kmh, secs } => (kmh, secs, true),
            Seg::Stand { secs } => {
                // It halted braking at 2.5 m/s² after the last moving fix.
                let v = v_prev / 3.6;
                x_m += v * v / 5.0 - v * 15.0;
                (0.0, secs, true)
            }
            Seg::Silent { kmh, secs } => (kmh, secs, false),
        };
        v_prev = kmh;
        let end = t + secs;
        while t < end {
            if report {
                let i = fixes.len();
                let p = offset_m(ORIGIN, x_m + jitter(i), 0.0);
                fixes.push(Fix {
                    ts_utc: t,
                    lat: p.lat,
                    lon: p.lon,
                    speed_kmh: kmh,
                    heading_deg: 90.0,
                    ignition: true,
                    odometer_m: Some((x_m).round() as i64),
                });
            }
            x_m += kmh / 3.6 * 15.0;
            t += 15;
        }
    }
    fixes
}

fn run(fixes: &[Fix], fences: &[Geofence]) -> Analysis {
    let config = DetectionConfig::default();
    let ctx = Context {
        config: &config,
        fences,
        limit_kmh: 60.0,
        zone: chrono_tz::America::Guatemala,
    };
    let now = fixes.last().map_or(T0, |f| f.ts_utc);
    analyze(&ctx, fixes.iter().copied(), now)
}

#[test]
fn a_stop_is_back_dated_to_the_halt() {
    let fixes = track(
        &[
            Seg::Drive {
                kmh: 36.0,
                secs: 300,
            },
            Seg::Stand { secs: 600 },
            Seg::Drive {
                kmh: 36.0,
                secs: 300,
            },
        ],
        |_| 0.0,
    );
    let a = run(&fixes, &[]);
    assert_eq!(a.stops.len(), 1, "{:?}", a.stops);
    let stop = &a.stops[0];
    // The last moving fix is at T0+285 (36 km/h = 10 m/s): it halts 4 s later at 2.5 m/s².
    assert_eq!(stop.start_utc, T0 + 285 + 4);
    // The first moving fix is at T0+900 at 10 m/s: it left about 7 s earlier at 1.5 m/s².
    assert!(
        (T0 + 890..T0 + 900).contains(&stop.end_utc.unwrap()),
        "{:?}",
        stop.end_utc
    );
}

/// A unit parked on the antimeridian (Taveuni, Fiji): its fixes' longitudes flip between
/// 179.9999° and −179.9999° with the noise. Its stop is one stop at the meridian, as the same
/// track a degree west gives, not a centre averaged to longitude 0 that every fix is far from.
#[test]
fn a_stop_on_the_antimeridian_is_one_stop_there() {
    let segments = [
        Seg::Drive {
            kmh: 36.0,
            secs: 300,
        },
        Seg::Stand { secs: 900 },
        Seg::Drive {
            kmh: 36.0,
            secs: 300,
        },
    ];
    let jitter = |i: usize| if i.is_multiple_of(2) { 4.0 } else { -4.0 };
    let moved = |to_lon: f64| {
        let mut fixes = track(&segments, jitter);
        let still: Vec<f64> = fixes
            .iter()
            .filter(|f| f.speed_kmh == 0.0)
            .map(|f| f.lon)
            .collect();
        let parked = still.iter().sum::<f64>() / still.len() as f64;
        for f in &mut fixes {
            f.lat -= ORIGIN.lat + 16.79;
            f.lon += to_lon - parked;
            if f.lon >= 180.0 {
                f.lon -= 360.0;
            }
        }
        fixes
    };
    let control = run(&moved(179.0), &[]);
    assert_eq!(control.stops.len(), 1, "{:?}", control.stops);
    let fixes = moved(180.0);
    assert!(fixes.iter().any(|f| f.speed_kmh == 0.0 && f.lon < 0.0));
    assert!(fixes.iter().any(|f| f.speed_kmh == 0.0 && f.lon > 0.0));
    let a = run(&fixes, &[]);
    assert_eq!(a.stops.len(), 1, "{:?}", a.stops);
    let (stop, twin) = (&a.stops[0], &control.stops[0]);
    assert_eq!(
        (stop.start_utc, stop.end_utc),
        (twin.start_utc, twin.end_utc)
    );
    let at = LatLon::new(stop.lat, stop.lon);
    assert!(
        crate::geometry::earth::distance_m(at, LatLon::new(-16.79, 180.0)) < 5.0,
        "{at:?}"
    );
    assert!((-180.0..=180.0).contains(&stop.lon), "{at:?}");
}

#[test]
fn a_traffic_halt_is_not_a_stop() {
    let fixes = track(
        &[
            Seg::Drive {
                kmh: 40.0,
                secs: 300,
            },
            Seg::Stand { secs: 60 },
            Seg::Drive {
                kmh: 40.0,
                secs: 300,
            },
        ],
        |_| 0.0,
    );
    assert!(run(&fixes, &[]).stops.is_empty());
}

#[test]
fn parked_jitter_neither_ends_the_stop_nor_adds_kilometres() {
    // 20 m of jitter, and one 150 m outlier, while standing for half an hour.
    let fixes = track(
        &[
            Seg::Drive {
                kmh: 40.0,
                secs: 300,
            },
            Seg::Stand { secs: 1800 },
            Seg::Drive {
                kmh: 40.0,
                secs: 300,
            },
        ],
        |i| {
            if i == 40 {
                150.0
            } else {
                ((i * 7919) % 41) as f64 - 20.0
            }
        },
    );
    let a = run(&fixes, &[]);
    assert_eq!(a.stops.len(), 1, "{:?}", a.stops);
    let quiet = track(
        &[
            Seg::Drive {
                kmh: 40.0,
                secs: 300,
            },
            Seg::Stand { secs: 1800 },
            Seg::Drive {
                kmh: 40.0,
                secs: 300,
            },
        ],
        |_| 0.0,
    );
    let quiet_km = run(&quiet, &[]).days[0].km_gps;
    let odometer = |f: Option<&Fix>| f.and_then(|f| f.odometer_m).unwrap() as f64 / 1000.0;
    let true_km = odometer(quiet.last()) - odometer(quiet.first());
    // No phantom kilometres from the jitter, and both within 1 % of the path.
    let noisy_km = a.days[0].km_gps;
    assert!(noisy_km <= quiet_km * 1.01, "{noisy_km} vs {quiet_km}");
    for km in [noisy_km, quiet_km] {
        assert!((km - true_km).abs() / true_km < 0.01, "{km} vs {true_km}");
    }
}

#[test]
fn overspeed_needs_two_clear_fixes_and_is_back_dated() {
    let base = [Seg::Drive {
        kmh: 50.0,
        secs: 300,
    }];
    let fixes = track(
        &[
            base[0],
            Seg::Drive {
                kmh: 80.0,
                secs: 90,
            },
            Seg::Drive {
                kmh: 50.0,
                secs: 300,
            },
        ],
        |_| 0.0,
    );
    let a = run(&fixes, &[]);
    assert_eq!(a.overspeeds.len(), 1);
    let o = &a.overspeeds[0];
    assert_eq!(o.max_kmh, 80.0);
    // 50 → 80 between T0+285 and T0+300 crosses 60 a third of the way.
    assert_eq!(o.start_utc, T0 + 290);
    // A single fast fix is a glitch.
    let glitch = track(
        &[
            base[0],
            Seg::Drive {
                kmh: 80.0,
                secs: 15,
            },
            Seg::Drive {
                kmh: 50.0,
                secs: 300,
            },
        ],
        |_| 0.0,
    );
    assert!(run(&glitch, &[]).overspeeds.is_empty());
    // Noise at the limit is not speeding.
    let at_limit = track(
        &[Seg::Drive {
            kmh: 62.0,
            secs: 600,
        }],
        |_| 0.0,
    );
    assert!(run(&at_limit, &[]).overspeeds.is_empty());
}

#[test]
fn a_reading_just_under_the_limit_ends_an_episode_but_an_invalid_zero_does_not() {
    // One report each: 50 km/h for five minutes, then `middle` between two clearly fast ones.
    let episode = |fast: f64, middle: f64| {
        let one = |kmh: f64| Seg::Drive { kmh, secs: 15 };
        let cruise = Seg::Drive {
            kmh: 50.0,
            secs: 300,
        };
        run(
            &track(&[cruise, one(fast), one(middle), one(fast), cruise], |_| {
                0.0
            }),
            &[],
        )
        .overspeeds
    };
    // Doppler noise around a 60 km/h limit: 64, 57, 64 is two lone glitches, not 45 s of speeding.
    assert!(episode(64.0, 57.0).is_empty());
    // A tracker reporting 0 while moving between two fast reports: one episode, not none.
    let bridged = episode(80.0, 0.0);
    assert_eq!(bridged.len(), 1);
    assert_eq!(bridged[0].max_kmh, 80.0);
}

#[test]
fn a_silence_while_on_is_a_signal_loss_with_exact_bounds() {
    let fixes = track(
        &[
            Seg::Drive {
                kmh: 40.0,
                secs: 300,
            },
            Seg::Silent {
                kmh: 40.0,
                secs: 600,
            },
            Seg::Drive {
                kmh: 40.0,
                secs: 300,
            },
        ],
        |_| 0.0,
    );
    let a = run(&fixes, &[]);
    assert_eq!(a.gaps.len(), 1);
    assert_eq!(
        (a.gaps[0].from_utc, a.gaps[0].to_utc),
        (T0 + 285, Some(T0 + 900))
    );
    // Distance across the silence is bridged: within 1 % of the truth (first to last fix).
    let true_km = 40.0 / 3.6 * 1185.0 / 1000.0;
    assert!(
        (a.days[0].km_gps - true_km).abs() / true_km < 0.01,
        "{}",
        a.days[0].km_gps
    );
}

#[test]
fn fence_crossings_are_debounced_and_interpolated() {
    // A fence from 1,000 m to 3,000 m east of the origin; the track crosses it at 10 m/s.
    let fence = Geofence::new(
        "zona".into(),
        "x".into(),
        Shape::Square {
            centre: offset_m(ORIGIN, 2000.0, 0.0),
            half_side_m: 1000.0,
        },
        None,
    );
    let fixes = track(
        &[Seg::Drive {
            kmh: 36.0,
            secs: 600,
        }],
        |_| 0.0,
    );
    let a = run(&fixes, std::slice::from_ref(&fence));
    assert_eq!(a.visits.len(), 1, "{:?}", a.visits);
    let v = &a.visits[0];
    assert!(
        (v.entry_utc - (T0 + 100)).abs() <= 1,
        "{}",
        v.entry_utc - T0
    );
    assert!(
        (v.exit_utc.unwrap() - (T0 + 300)).abs() <= 1,
        "{:?}",
        v.exit_utc.map(|e| e - T0)
    );
    // A 15-second dip outside does not split the visit.
    let dip = track(
        &[Seg::Drive {
            kmh: 36.0,
            secs: 600,
        }],
        |i| if i == 14 { 5000.0 } else { 0.0 },
    );
    assert_eq!(run(&dip, std::slice::from_ref(&fence)).visits.len(), 1);
}

/// A night shift driving through midnight: the kilometres of the two days add up to the whole
/// drive, odometer and GPS alike, each day with its share (an hour on either side here).
#[test]
fn kilometres_through_midnight_are_shared_between_the_days() {
    let zone = chrono_tz::Europe::Madrid;
    // 23:00:07 on Saturday 24 October 2026, Madrid (+02:00).
    let wall = crate::calendar::WallTime::parse("2026-10-24T23:00:07").unwrap();
    let start = crate::calendar::instant(zone, wall).unwrap();
    let fixes: Vec<Fix> = track(
        &[Seg::Drive {
            kmh: 36.0,
            secs: 7200,
        }],
        |_| 0.0,
    )
    .into_iter()
    .map(|f| Fix {
        ts_utc: f.ts_utc - T0 + start,
        ..f
    })
    .collect();
    let config = DetectionConfig::default();
    let ctx = Context {
        config: &config,
        fences: &[],
        limit_kmh: 60.0,
        zone,
    };
    let now = fixes.last().map_or(start, |f| f.ts_utc);
    let days = analyze(&ctx, fixes.iter().copied(), now).days;
    let dates: Vec<String> = days.iter().map(|d| d.date.to_string()).collect();
    assert_eq!(dates, ["2026-10-24", "2026-10-25"]);
    let total_m = fixes.last().unwrap().odometer_m.unwrap() - fixes[0].odometer_m.unwrap();
    let odometer: f64 = days.iter().map(|d| d.km_odometer.unwrap()).sum();
    assert!(
        (odometer * 1000.0 - total_m as f64).abs() < 1e-6,
        "{odometer}"
    );
    let gps: f64 = days.iter().map(|d| d.km_gps).sum();
    assert!((gps * 1000.0 - total_m as f64).abs() < 1.0, "{gps}");
    // 10 m/s: Saturday has what was driven until its last instant, to the metre.
    let (_, midnight) = crate::calendar::day_bounds(zone, days[0].date);
    let saturday_km = (midnight - start) as f64 * 10.0 / 1000.0;
    assert!(
        (days[0].km_odometer.unwrap() - saturday_km).abs() < 0.002,
        "{days:?}"
    );
    assert!((days[0].km_gps - saturday_km).abs() < 0.002, "{days:?}");
}

/// Each detector says what its event rests on: the first and last fix it used, how many, and
/// the measure held to a threshold.
#[test]
fn every_event_carries_its_evidence() {
    let fixes = track(
        &[
            Seg::Drive {
                kmh: 36.0,
                secs: 300,
            },
            Seg::Stand { secs: 600 },
            Seg::Drive {
                kmh: 80.0,
                secs: 300,
            },
            Seg::Silent {
                kmh: 36.0,
                secs: 300,
            },
            Seg::Drive {
                kmh: 36.0,
                secs: 150,
            },
        ],
        |i| if i % 2 == 0 { 4.0 } else { -4.0 },
    );
    let config = DetectionConfig::default();
    let a = run(&fixes, &[]);

    let stop = &a.stops[0].evidence;
    assert_eq!(
        (stop.first_fix_utc, stop.last_fix_utc, stop.fixes),
        (T0 + 300, T0 + 885, 40),
        "{stop:?}"
    );
    assert_eq!(stop.threshold.name, evidence::STOP_RADIUS);
    assert_eq!(stop.threshold.value, config.parada_radio_m);
    assert!(
        stop.measure > 0.0 && stop.measure <= stop.threshold.value,
        "{stop:?}"
    );

    let speeding = &a.overspeeds[0].evidence;
    assert_eq!(
        (
            speeding.first_fix_utc,
            speeding.last_fix_utc,
            speeding.fixes
        ),
        (T0 + 900, T0 + 1185, 20),
        "{speeding:?}"
    );
    assert_eq!(speeding.measure, 80.0);
    assert_eq!(speeding.threshold.name, evidence::SPEED_LIMIT);
    assert_eq!(
        speeding.threshold.value,
        60.0 + config.exceso_tolerancia_kmh
    );

    let gap = &a.gaps[0].evidence;
    assert_eq!(
        (gap.first_fix_utc, gap.last_fix_utc, gap.fixes),
        (T0 + 1185, T0 + 1500, 2),
        "{gap:?}"
    );
    assert_eq!(gap.measure, 315.0);
    assert_eq!(
        (gap.threshold.name, gap.threshold.value),
        (evidence::SILENCE, config.perdida_senal_s.round())
    );
}

/// A unit that dips out of a fence's edge for one report, turns back and leaves by the far
/// edge a minute later left at the far edge: the dip was no exit.
#[test]
fn a_dip_out_and_back_does_not_date_a_later_exit() {
    let fence = Geofence::new(
        "cedis".into(),
        "bodega".into(),
        Shape::Square {
            centre: ORIGIN,
            half_side_m: 250.0,
        },
        None,
    );
    // Metres north of the centre, one report every 15 s at about 32 km/h: in from the north,
    // parked, south to 32 m past the edge, back north and out at the far edge.
    let mut north_m: Vec<f64> = vec![600.0, 467.0, 333.0, 200.0, 67.0, -67.0, -120.0];
    north_m.extend([-120.0; 10]);
    north_m.extend([
        -215.0, -282.0, -150.0, -20.0, 113.0, 230.0, 363.0, 496.0, 629.0, 762.0,
    ]);
    let fixes: Vec<Fix> = north_m
        .iter()
        .enumerate()
        .map(|(i, y)| {
            let p = offset_m(ORIGIN, 0.0, *y);
            let parked = (7..17).contains(&i);
            Fix {
                ts_utc: T0 + 15 * i as i64,
                lat: p.lat,
                lon: p.lon,
                speed_kmh: if parked { 0.0 } else { 32.0 },
                heading_deg: 0.0,
                ignition: true,
                odometer_m: None,
            }
        })
        .collect();
    let a = run(&fixes, std::slice::from_ref(&fence));
    assert_eq!(a.visits.len(), 1, "{:?}", a.visits);
    // Out by the north edge between the reports at 230 m and 363 m.
    let far_exit = T0 + 15 * 22 + (15.0 * 20.0 / 133.0_f64).round() as i64;
    let exit = a.visits[0].exit_utc.unwrap();
    assert!((exit - far_exit).abs() <= 2, "{}", exit - far_exit);
}

/// A unit parked in a depot, silent for half an hour (a tracker asleep overnight), whose
/// first fix after the silence is a 250 m jump outside, one second before a fix back inside
/// at 23 km/h: no exit across the silence (it was dated there, a miss and a false alarm). It
/// leaves at the time its fixes show. A unit that really left during the
/// silence keeps its exit back-dated into it, and one that left and came back at the speed its
/// fixes report has two visits.
#[test]
fn a_jump_after_a_silence_is_no_exit() {
    let depot = Geofence::new(
        "deposito".into(),
        "bodega".into(),
        Shape::Square {
            centre: ORIGIN,
            half_side_m: 120.0,
        },
        None,
    );
    let at = |t: i64, east_m: f64, kmh: f64| {
        let p = offset_m(ORIGIN, east_m, 0.0);
        Fix {
            ts_utc: T0 + t,
            lat: p.lat,
            lon: p.lon,
            speed_kmh: kmh,
            heading_deg: 90.0,
            ignition: true,
            odometer_m: None,
        }
    };
    // Parked at the centre for 10 min, every 15 s; silent until 40:00.
    let parked: Vec<Fix> = (0..=40).map(|i| at(15 * i, 0.0, 0.0)).collect();
    let wake = 2400;
    // Drives east at 23 km/h (6.4 m/s) from the wake-up: out by the edge at 120 m.
    let mut jumped = parked.clone();
    jumped.push(at(wake - 1, 250.0, 20.0));
    jumped.extend((0..40).map(|i| at(wake + 5 * i, 6.4 * (5 * i) as f64, 23.0)));
    let a = run(&jumped, std::slice::from_ref(&depot));
    assert_eq!(a.visits.len(), 1, "{:?}", a.visits);
    let exit = a.visits[0].exit_utc.map(|e| e - T0);
    // Out at 120 m / 6.4 m/s = 18.75 s after the wake-up.
    assert!(
        exit.is_some_and(|e| (e - (wake + 19)).abs() <= 3),
        "{exit:?}"
    );

    // Left during the silence: first fix 300 m out, then further out. The exit is the
    // crossing interpolated across the silence, as before.
    let mut left = parked.clone();
    left.extend((0..20).map(|i| at(wake + 5 * i, 300.0 + 32.0 * i as f64, 23.0)));
    let a = run(&left, std::slice::from_ref(&depot));
    assert_eq!(a.visits.len(), 1, "{:?}", a.visits);
    let exit = a.visits[0].exit_utc.map(|e| e - T0);
    let across = 600 + (1800.0 * 120.0 / 300.0_f64).round() as i64;
    assert!(exit.is_some_and(|e| (e - across).abs() <= 2), "{exit:?}");

    // Left during the silence and driving back in at 30 km/h: 40 m out, 10 s later 40 m in.
    let mut back = parked;
    back.push(at(wake, 160.0, 30.0));
    back.extend((0..20).map(|i| at(wake + 10 + 5 * i, 80.0, 0.0)));
    let a = run(&back, std::slice::from_ref(&depot));
    assert_eq!(a.visits.len(), 2, "{:?}", a.visits);
    let exit = a.visits[0].exit_utc.map(|e| e - T0);
    let across = 600 + (1800.0 * 120.0 / 160.0_f64).round() as i64;
    assert!(exit.is_some_and(|e| (e - across).abs() <= 2), "{exit:?}");
    assert!(
        (a.visits[1].entry_utc - T0 - (wake + 5)).abs() <= 2,
        "{:?}",
        a.visits[1]
    );
}

#[test]
fn a_cold_first_fix_outside_does_not_date_a_visit_under_way() {
    // Parked in a depot when the data starts, moving off after ten minutes; the tracker's
    // first fix is a cold start 2 km away. The unit was inside since before the data.
    let depot = Geofence::new(
        "deposito".into(),
        "bodega".into(),
        Shape::Square {
            centre: ORIGIN,
            half_side_m: 200.0,
        },
        None,
    );
    let segments = [
        Seg::Stand { secs: 600 },
        Seg::Drive {
            kmh: 36.0,
            secs: 300,
        },
    ];
    for cold_m in [0.0, 2000.0, -1500.0] {
        let fixes = track(&segments, |i| if i == 0 { cold_m } else { 0.0 });
        let a = run(&fixes, std::slice::from_ref(&depot));
        assert_eq!(a.visits.len(), 1, "{cold_m} m: {:?}", a.visits);
        let v = &a.visits[0];
        assert!(v.from_data_start, "{cold_m} m: {v:?}");
        assert!(
            (v.exit_utc.unwrap() - (T0 + 620)).abs() <= 15,
            "{cold_m} m: {:?}",
            v.exit_utc.map(|e| e - T0)
        );
    }
    // A first fix inside by a cold start, the unit outside since: no visit at all.
    let away = track(&segments, |i| if i == 0 { 0.0 } else { 3000.0 });
    assert_eq!(run(&away, std::slice::from_ref(&depot)).visits, vec![]);
}

#[test]
fn an_invalid_speed_is_no_evidence_of_speeding() {
    // East at 45 km/h under a 60 km/h limit, every 10 s. One reading of 68 km/h (noise), then
    // two absurd ones (290 and 390 km/h): the check replaces those with the last valid speed,
    // which is no reading of its own. One fix over the limit is not an episode.
    let speeds: Vec<f64> = (0..40)
        .map(|i| match i {
            20 => 68.0,
            21 => 290.0,
            22 => 390.0,
            _ => 45.0,
        })
        .collect();
    let fixes: Vec<Fix> = speeds
        .iter()
        .enumerate()
        .map(|(i, &kmh)| {
            let p = offset_m(ORIGIN, i as f64 * 125.0, 0.0);
            Fix {
                ts_utc: T0 + i as i64 * 10,
                lat: p.lat,
                lon: p.lon,
                speed_kmh: kmh,
                heading_deg: 90.0,
                ignition: true,
                odometer_m: None,
            }
        })
        .collect();
    let a = run(&fixes, &[]);
    assert_eq!(a.overspeeds, vec![], "{:?}", a.overspeeds);
}

/// Fixes every `every_s` seconds driving east at 10 m/s from the origin, with `north_m(i)`
/// metres of position error north on the i-th.
fn drive_every(every_s: i64, count: usize, north_m: impl Fn(usize) -> f64) -> Vec<Fix> {
    (0..count)
        .map(|i| {
            let t = every_s * i as i64;
            let p = offset_m(ORIGIN, 10.0 * t as f64, north_m(i));
            Fix {
                ts_utc: T0 + t,
                lat: p.lat,
                lon: p.lon,
                speed_kmh: 36.0,
                heading_deg: 90.0,
                ignition: true,
                odometer_m: None,
            }
        })
        .collect()
}

/// A tracker reporting every 30 s drives through a fence in 75 s: two fixes inside, 30 s
/// apart, yet the unit was inside longer than the debounce — counted from the interpolated
/// crossing, not from the first fix inside. Two fixes 15 s apart pushed inside an edge by
/// noise are no visit: the time on the new side from the crossing is still under it.
#[test]
fn the_debounce_counts_from_the_crossing_not_from_the_first_fix_inside() {
    let fence = Geofence::new(
        "zona".into(),
        "x".into(),
        Shape::Square {
            centre: offset_m(ORIGIN, 2000.0, 0.0),
            half_side_m: 375.0,
        },
        None,
    );
    let fixes = drive_every(30, 20, |_| 0.0);
    let a = run(&fixes, std::slice::from_ref(&fence));
    assert_eq!(a.visits.len(), 1, "{:?}", a.visits);
    let v = &a.visits[0];
    assert!(
        (v.entry_utc - (T0 + 163)).abs() <= 2,
        "{}",
        v.entry_utc - T0
    );
    let exit = v.exit_utc.map(|e| e - T0);
    assert!(exit.is_some_and(|e| (e - 238).abs() <= 2), "{exit:?}");
    // Along the fence's south edge, 20 m outside, two reports in a row 40 m off.
    let edge = |i: usize| if (40..42).contains(&i) { 20.0 } else { -20.0 };
    let along = drive_every(15, 120, edge)
        .into_iter()
        .map(|f| {
            let p = offset_m(f.point(), 0.0, -375.0);
            Fix {
                lat: p.lat,
                lon: p.lon,
                ..f
            }
        })
        .collect::<Vec<_>>();
    assert_eq!(run(&along, std::slice::from_ref(&fence)).visits, vec![]);
}

/// A tracker reporting every 30 s with Doppler speeds and an odometer: a unit halted 200 m
/// outside a depot moves 300 m into it between two reports, both still (it queued at the
/// gate, then drove in and parked). The odometer says it moved: two stops, and a visit from
/// the move — not the first stop held across the drift-like far run, the unit never inside.
#[test]
fn an_odometer_that_advanced_between_two_still_fixes_ends_the_stop() {
    let depot = Geofence::new(
        "deposito".into(),
        "bodega".into(),
        Shape::Square {
            centre: offset_m(ORIGIN, 3400.0, 0.0),
            half_side_m: 200.0,
        },
        None,
    );
    // (metres east, km/h) every 30 s: driving, queued at 3,000 m, parked at 3,300 m, off.
    let mut legs: Vec<(f64, f64)> = (0..10).map(|i| (300.0 * i as f64, 36.0)).collect();
    legs.extend([(3000.0, 0.0); 10]);
    legs.extend([(3300.0, 0.0); 20]);
    legs.extend((1..=10).map(|i| (3300.0 + 300.0 * i as f64, 36.0)));
    let fixes: Vec<Fix> = legs
        .iter()
        .enumerate()
        .map(|(i, (x, kmh))| {
            let p = offset_m(ORIGIN, *x, 0.0);
            Fix {
                ts_utc: T0 + 30 * i as i64,
                lat: p.lat,
                lon: p.lon,
                speed_kmh: *kmh,
                heading_deg: 90.0,
                ignition: true,
                odometer_m: Some(x.round() as i64),
            }
        })
        .collect();
    let a = run(&fixes, std::slice::from_ref(&depot));
    assert_eq!(a.stops.len(), 2, "{:?}", a.stops);
    let moved = T0 + 30 * 19;
    assert!(
        a.stops[0]
            .end_utc
            .is_some_and(|e| (moved..=moved + 30).contains(&e))
    );
    assert!((moved..=moved + 30).contains(&a.stops[1].start_utc));
    assert_eq!(a.visits.len(), 1, "{:?}", a.visits);
    let entry = a.visits[0].entry_utc;
    assert!((moved..=moved + 30).contains(&entry), "{}", entry - moved);
}

/// An adaptive tracker's night at σ 25 m with 20 m drift (`minimo`, `comercial`, seeds 73 and
/// 75): the braking record, the "off" record, then a heartbeat an hour that the drift puts 80
/// m away, the odometer standing still throughout. Three far heartbeats in a row made a
/// far run after a silence, and the stop, resting on two fixes, was cut in the middle of the
/// first silence: the night read as a 33-minute stop and another. An odometer that stood still
/// says the unit did not move, however few fixes the stop rests on: the far run re-centres it.
#[test]
fn far_heartbeats_over_an_odometer_that_stood_still_do_not_split_the_night() {
    let odometer = |x: f64| Some(x.round() as i64);
    let at = |t: i64, x: f64, kmh: f64, ignition: bool, odo: f64| {
        let p = offset_m(ORIGIN, x, 0.0);
        Fix {
            ts_utc: T0 + t,
            lat: p.lat,
            lon: p.lon,
            speed_kmh: kmh,
            heading_deg: 90.0,
            ignition,
            odometer_m: odometer(odo),
        }
    };
    let mut fixes: Vec<Fix> = (0..10)
        .map(|i| at(15 * i, 165.0 * i as f64, 40.0, true, 165.0 * i as f64))
        .collect();
    let parked = 165.0 * 10.0;
    fixes.push(at(150, parked, 4.0, true, parked));
    fixes.push(at(317, parked + 15.0, 0.0, false, parked));
    for h in 1..=14 {
        fixes.push(at(317 + 3600 * h, parked + 80.0, 0.0, false, parked));
    }
    let morning = 317 + 3600 * 14 + 600;
    fixes.push(at(morning, parked + 20.0, 0.0, true, parked));
    for i in 1..=6 {
        let x = parked + 150.0 * i as f64;
        fixes.push(at(morning + 15 * i, x, 36.0, true, x));
    }
    let a = run(&fixes, &[]);
    assert_eq!(a.stops.len(), 1, "{:?}", a.stops);
    assert!((T0 + 150..=T0 + 160).contains(&a.stops[0].start_utc));
}
