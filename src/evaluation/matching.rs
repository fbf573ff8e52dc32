//! Scoring one event type: pairing truth and detected intervals, and the figures that follow.
//!
//! Owns the matching rule and nothing else (no I/O, no time zones, no event kinds): a detection
//! matches a truth interval of the same unit (and fence) when both its start and its end are
//! within the tolerance of the truth's (a brief event reported late is still that event). Open ends follow two rules. An end still
//! open at "now" is compared as "now" when the other side has ended (a stop the engine still
//! reports, though the unit left 20 minutes ago, is 20 minutes off); two open ends agree and
//! measure nothing. A start "before the data" agrees only with another such start (the truth and
//! the engine both say the unit was already there) and measures nothing. Pairs are assigned one
//! to one, smallest total error first. A truth interval marked don't-care (what the detectors
//! cannot be expected to resolve) absorbs any overlapping detection: matching it is neither a
//! hit nor a false alarm, missing it is not a miss.

/// One interval of one type, truth or detected.
#[derive(Debug, Clone, PartialEq)]
pub struct Interval {
    pub plate: String,
    /// The fence name for visits, empty otherwise.
    pub key: String,
    /// `None`: already under way when the data begins.
    pub start: Option<i64>,
    /// `None`: still under way at "now".
    pub end: Option<i64>,
    pub dont_care: bool,
    /// On a truth interval, how loosely the unit's reports bound its start and its end,
    /// seconds: the interval between the reports either side of the instant (capped at the
    /// tracker's cadence while moving, see `intervals::Reports`). A match's error at that end
    /// may be this large when it exceeds the tolerance: a tracker recording every five
    /// minutes dates a crossing only to five minutes, whatever a detector does. 0 on
    /// detections and wherever the reports are not known.
    pub slack_s: [i64; 2],
}

/// How strict a match is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// Largest start or end error of a match, seconds.
    pub tolerance_s: i64,
    /// Where open ends stop.
    pub now_utc: i64,
}

/// Counts and errors of one type. Misses and false alarms are the intervals themselves.
#[derive(Debug, Clone, PartialEq)]
pub struct Score {
    pub true_positives: usize,
    pub false_positives: usize,
    pub false_negatives: usize,
    /// Absolute start and end errors of the hits, seconds, where both sides know them.
    pub start_errors_s: Vec<i64>,
    pub end_errors_s: Vec<i64>,
    pub misses: Vec<Interval>,
    pub false_alarms: Vec<Interval>,
}

impl Score {
    /// TP / (TP + FP); `None` when nothing was detected (0/0 is not 1).
    pub fn precision(&self) -> Option<f64> {
        ratio(
            self.true_positives,
            self.true_positives + self.false_positives,
        )
    }

    /// TP / (TP + FN); `None` when there was nothing to find.
    pub fn recall(&self) -> Option<f64> {
        ratio(
            self.true_positives,
            self.true_positives + self.false_negatives,
        )
    }

    /// 2·TP / (2·TP + FP + FN): the harmonic mean of precision and recall, defined (as 0) even
    /// when nothing was detected; `None` only when there was neither truth nor detection.
    pub fn f1(&self) -> Option<f64> {
        ratio(
            2 * self.true_positives,
            2 * self.true_positives + self.false_positives + self.false_negatives,
        )
    }
}

fn ratio(numerator: usize, denominator: usize) -> Option<f64> {
    (denominator > 0).then(|| numerator as f64 / denominator as f64)
}

/// The start and end errors of `detected` against `truth` when it may match, else `None`.
/// Errors are `None` where neither side knows the time (both open).
fn errors(
    truth: &Interval,
    detected: &Interval,
    rules: Rules,
) -> Option<(Option<i64>, Option<i64>)> {
    if !same_subject(truth, detected) {
        return None;
    }
    let start = match (truth.start, detected.start) {
        (Some(t), Some(d)) => Some((d - t).abs()),
        (None, None) => None,
        // One side says "already there when the data began", the other names an arrival.
        _ => return None,
    };
    let end = match (truth.end, detected.end) {
        (None, None) => None,
        (t, d) => Some((d.unwrap_or(rules.now_utc) - t.unwrap_or(rules.now_utc)).abs()),
    };
    let within = |e: Option<i64>, slack: i64| e.is_none_or(|e| e <= rules.tolerance_s.max(slack));
    (within(start, truth.slack_s[0]) && within(end, truth.slack_s[1])).then_some((start, end))
}

fn same_subject(a: &Interval, b: &Interval) -> bool {
    a.plate == b.plate && a.key == b.key
}

fn overlap(a: &Interval, b: &Interval, rules: Rules) -> bool {
    let start = a.start.unwrap_or(i64::MIN).max(b.start.unwrap_or(i64::MIN));
    let end = a
        .end
        .unwrap_or(rules.now_utc)
        .min(b.end.unwrap_or(rules.now_utc));
    end > start
}

/// Scores `detected` against `truth` under `rules`.
pub fn score(truth: &[Interval], detected: &[Interval], rules: Rules) -> Score {
    // (don't-care, total error, truth index, detected index): real matches first, the best
    // first, then what don't-care truth absorbs.
    let mut candidates = Vec::new();
    for (ti, t) in truth.iter().enumerate() {
        for (di, d) in detected.iter().enumerate() {
            if let Some((start, end)) = errors(t, d, rules) {
                let cost = start.unwrap_or(0) + end.unwrap_or(0);
                candidates.push((t.dont_care, cost, ti, di));
            } else if t.dont_care && same_subject(t, d) && overlap(t, d, rules) {
                candidates.push((true, i64::MAX, ti, di));
            }
        }
    }
    candidates.sort_unstable();
    let mut truth_match = vec![None; truth.len()];
    let mut detected_match = vec![None; detected.len()];
    for &(_, _, ti, di) in &candidates {
        if truth_match[ti].is_none() && detected_match[di].is_none() {
            truth_match[ti] = Some(di);
            detected_match[di] = Some(ti);
        }
    }
    let mut score = Score {
        true_positives: 0,
        false_positives: 0,
        false_negatives: 0,
        start_errors_s: Vec::new(),
        end_errors_s: Vec::new(),
        misses: Vec::new(),
        false_alarms: Vec::new(),
    };
    for (t, matched) in truth.iter().zip(&truth_match) {
        if t.dont_care {
            continue;
        }
        match matched {
            Some(di) => {
                score.true_positives += 1;
                if let Some((start, end)) = errors(t, &detected[*di], rules) {
                    score.start_errors_s.extend(start);
                    score.end_errors_s.extend(end);
                }
            }
            None => score.misses.push(t.clone()),
        }
    }
    for (d, matched) in detected.iter().zip(&detected_match) {
        if matched.is_none() && !d.dont_care {
            score.false_alarms.push(d.clone());
        }
    }
    score.false_positives = score.false_alarms.len();
    score.false_negatives = score.misses.len();
    score
}

/// Nearest-rank percentile (`p` in 0–100) of errors; `None` for no errors.
pub fn percentile(errors: &[i64], p: u32) -> Option<i64> {
    let mut sorted = errors.to_vec();
    sorted.sort_unstable();
    let rank = (u64::from(p) * sorted.len() as u64).div_ceil(100).max(1);
    sorted.get(rank as usize - 1).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 100_000;
    const RULES: Rules = Rules {
        tolerance_s: 60,
        now_utc: NOW,
    };

    fn iv(start: Option<i64>, end: Option<i64>) -> Interval {
        Interval {
            plate: "P-1".into(),
            key: String::new(),
            start,
            end,
            dont_care: false,
            slack_s: [0, 0],
        }
    }
    fn closed(start: i64, end: i64) -> Interval {
        iv(Some(start), Some(end))
    }

    /// (TP, FP, FN, start errors, end errors)
    type Expected = (usize, usize, usize, &'static [i64], &'static [i64]);
    /// (name, truth, detected, rules, expected)
    type Case = (&'static str, Vec<Interval>, Vec<Interval>, Rules, Expected);

    fn check(
        name: &str,
        truth: &[Interval],
        detected: &[Interval],
        rules: Rules,
        expected: Expected,
    ) {
        let s = score(truth, detected, rules);
        let got = (
            s.true_positives,
            s.false_positives,
            s.false_negatives,
            s.start_errors_s.as_slice(),
            s.end_errors_s.as_slice(),
        );
        assert_eq!(got, expected, "{name}");
        assert_eq!(s.misses.len(), s.false_negatives, "{name}");
        assert_eq!(s.false_alarms.len(), s.false_positives, "{name}");
    }

    #[test]
    fn matching_cases() {
        let wide = Rules {
            tolerance_s: 180,
            now_utc: NOW,
        };
        let other_plate = Interval {
            plate: "P-2".into(),
            ..closed(1000, 2000)
        };
        let other_fence = Interval {
            key: "Bodega".into(),
            ..closed(1000, 2000)
        };
        let dont_care = Interval {
            dont_care: true,
            ..closed(1000, 1200)
        };
        // The reports bound the truth's start only to 200 s (a tracker recording every few
        // minutes): a start that far off is still a hit, an end as far off is not.
        let loose_start = Interval {
            slack_s: [200, 0],
            ..closed(1000, 2000)
        };
        #[rustfmt::skip]
        let cases: Vec<Case> = vec![
            ("empty", vec![], vec![], RULES, (0, 0, 0, &[], &[])),
            ("only truth", vec![closed(1000, 2000)], vec![], RULES, (0, 0, 1, &[], &[])),
            ("only detections", vec![], vec![closed(1000, 2000)], RULES, (0, 1, 0, &[], &[])),
            ("exact", vec![closed(1000, 2000)], vec![closed(1000, 2000)], RULES, (1, 0, 0, &[0], &[0])),
            ("shifted within", vec![closed(1000, 2000)], vec![closed(1045, 1970)], RULES, (1, 0, 0, &[45], &[30])),
            ("shifted at the bound", vec![closed(1000, 2000)], vec![closed(1060, 2060)], RULES, (1, 0, 0, &[60], &[60])),
            ("shifted beyond", vec![closed(1000, 2000)], vec![closed(1120, 2120)], RULES, (0, 1, 1, &[], &[])),
            ("shifted beyond, wider tolerance", vec![closed(1000, 2000)], vec![closed(1120, 2120)], wide, (1, 0, 0, &[120], &[120])),
            ("start beyond, end exact", vec![closed(1000, 2000)], vec![closed(900, 2000)], RULES, (0, 1, 1, &[], &[])),
            ("brief and late, within tolerance", vec![closed(1000, 1030)], vec![closed(1040, 1070)], RULES, (1, 0, 0, &[40], &[40])),
            ("split in two", vec![closed(1000, 3000)], vec![closed(1000, 1900), closed(2100, 3000)], RULES, (0, 2, 1, &[], &[])),
            ("merged two", vec![closed(1000, 2000), closed(2100, 3000)], vec![closed(1000, 3000)], RULES, (0, 1, 2, &[], &[])),
            ("best pair wins", vec![closed(1000, 2000)], vec![closed(1050, 2000), closed(1000, 2010)], RULES, (1, 1, 0, &[0], &[10])),
            ("other unit", vec![closed(1000, 2000)], vec![other_plate], RULES, (0, 1, 1, &[], &[])),
            ("other fence", vec![closed(1000, 2000)], vec![other_fence], RULES, (0, 1, 1, &[], &[])),
            ("open start both", vec![iv(None, Some(2000))], vec![iv(None, Some(2030))], RULES, (1, 0, 0, &[], &[30])),
            ("open start in truth only", vec![iv(None, Some(2000))], vec![closed(1500, 2000)], RULES, (0, 1, 1, &[], &[])),
            ("open start in detection only", vec![closed(1500, 2000)], vec![iv(None, Some(2000))], RULES, (0, 1, 1, &[], &[])),
            ("open end both", vec![iv(Some(1000), None)], vec![iv(Some(1010), None)], RULES, (1, 0, 0, &[10], &[])),
            ("open end in detection, truth ended just before now", vec![closed(1000, NOW - 40)], vec![iv(Some(1000), None)], RULES, (1, 0, 0, &[0], &[40])),
            ("open end in detection, truth ended long before now", vec![closed(1000, 2000)], vec![iv(Some(1000), None)], RULES, (0, 1, 1, &[], &[])),
            ("open end in truth, detection closed long before now", vec![iv(Some(1000), None)], vec![closed(1000, 2000)], RULES, (0, 1, 1, &[], &[])),
            ("open both ends", vec![iv(None, None)], vec![iv(None, None)], RULES, (1, 0, 0, &[], &[])),
            ("don't care matched", vec![dont_care.clone()], vec![closed(1010, 1190)], RULES, (0, 0, 0, &[], &[])),
            ("don't care absorbs a loose detection", vec![dont_care.clone()], vec![closed(1150, 1500)], RULES, (0, 0, 0, &[], &[])),
            ("don't care missed", vec![dont_care], vec![], RULES, (0, 0, 0, &[], &[])),
            ("start within the reports' slack", vec![loose_start.clone()], vec![closed(1150, 2030)], RULES, (1, 0, 0, &[150], &[30])),
            ("start beyond the reports' slack", vec![loose_start.clone()], vec![closed(1210, 2000)], RULES, (0, 1, 1, &[], &[])),
            ("end as far off, no slack there", vec![loose_start], vec![closed(1000, 2150)], RULES, (0, 1, 1, &[], &[])),
        ];
        for (name, truth, detected, rules, expected) in cases {
            check(name, &truth, &detected, rules, expected);
        }
    }

    #[test]
    fn every_detection_shifted_fails_at_the_default_tolerance() {
        let truth: Vec<Interval> = (0..10).map(|k| closed(k * 5000, k * 5000 + 900)).collect();
        let shifted: Vec<Interval> = truth
            .iter()
            .map(|t| closed(t.start.unwrap() + 120, t.end.unwrap() + 120))
            .collect();
        let s = score(&truth, &shifted, RULES);
        assert_eq!(
            (s.true_positives, s.precision(), s.recall()),
            (0, Some(0.0), Some(0.0))
        );
    }

    #[test]
    fn ratios_are_not_applicable_without_cases() {
        let check = |tp, fp, fn_, expected: (Option<f64>, Option<f64>, Option<f64>)| {
            let s = Score {
                true_positives: tp,
                false_positives: fp,
                false_negatives: fn_,
                start_errors_s: vec![],
                end_errors_s: vec![],
                misses: vec![],
                false_alarms: vec![],
            };
            assert_eq!(
                (s.precision(), s.recall(), s.f1()),
                expected,
                "{tp} {fp} {fn_}"
            );
        };
        check(0, 0, 0, (None, None, None));
        check(0, 0, 3, (None, Some(0.0), Some(0.0)));
        check(0, 2, 0, (Some(0.0), None, Some(0.0)));
        check(3, 1, 0, (Some(0.75), Some(1.0), Some(6.0 / 7.0)));
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let check = |errors: &[i64], expected: [Option<i64>; 3]| {
            let got = [50, 95, 100].map(|p| percentile(errors, p));
            assert_eq!(got, expected, "{errors:?}");
        };
        check(&[], [None, None, None]);
        check(&[7], [Some(7), Some(7), Some(7)]);
        check(&[4, 1, 3, 2], [Some(2), Some(4), Some(4)]);
        let hundred: Vec<i64> = (1..=100).rev().collect();
        check(&hundred, [Some(50), Some(95), Some(100)]);
    }
}
