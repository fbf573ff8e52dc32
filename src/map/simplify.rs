//! Track simplification in picture pixels (Ramer–Douglas–Peucker).
//!
//! Owns deciding which reports a drawn line needs. A day at 15 s is ~3,000 reports, most of
//! them on straight streets; dropping every n-th report (the obvious thinning) cuts corners
//! and stops, while RDP keeps every vertex that moves the line by more than a tolerance, so
//! the drawing is the same to the eye with a fraction of the points. Pure; iterative, so a
//! pathological track cannot overflow the stack.

/// Indices of `points` to keep: the first, the last, and every vertex farther than
/// `tolerance_px` from the chord of the stretch it belongs to. Sorted ascending.
pub fn rdp_indices(points: &[(f64, f64)], tolerance_px: f64) -> Vec<usize> {
    match points.len() {
        0 => return Vec::new(),
        1 => return vec![0],
        _ => {}
    }
    let mut keep = vec![false; points.len()];
    keep[0] = true;
    keep[points.len() - 1] = true;
    let tolerance_sq = tolerance_px * tolerance_px;
    let mut stack = vec![(0usize, points.len() - 1)];
    while let Some((first, last)) = stack.pop() {
        if last <= first + 1 {
            continue;
        }
        let (mut worst, mut worst_sq) = (first, 0.0);
        for i in first + 1..last {
            let d = distance_sq_to_segment(points[i], points[first], points[last]);
            if d > worst_sq {
                worst = i;
                worst_sq = d;
            }
        }
        if worst_sq > tolerance_sq {
            keep[worst] = true;
            stack.push((first, worst));
            stack.push((worst, last));
        }
    }
    keep.iter()
        .enumerate()
        .filter_map(|(i, k)| k.then_some(i))
        .collect()
}

fn distance_sq_to_segment(p: (f64, f64), a: (f64, f64), b: (f64, f64)) -> f64 {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let length_sq = dx * dx + dy * dy;
    let t = if length_sq == 0.0 {
        0.0
    } else {
        (((p.0 - a.0) * dx + (p.1 - a.1) * dy) / length_sq).clamp(0.0, 1.0)
    };
    let (x, y) = (a.0 + t * dx - p.0, a.1 + t * dy - p.1);
    x * x + y * y
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(points: &[(f64, f64)], tolerance: f64, expected: &[usize]) {
        assert_eq!(rdp_indices(points, tolerance), expected, "{points:?}");
    }

    #[test]
    fn keeps_corners_and_drops_collinear_points() {
        check(&[], 1.0, &[]);
        check(&[(1.0, 1.0)], 1.0, &[0]);
        check(&[(0.0, 0.0), (5.0, 0.1), (10.0, 0.0)], 1.0, &[0, 2]);
        check(
            &[
                (0.0, 0.0),
                (5.0, 0.0),
                (10.0, 0.0),
                (10.0, 5.0),
                (10.0, 10.0),
            ],
            0.5,
            &[0, 2, 4],
        );
        // A there-and-back excursion survives even though its ends coincide.
        check(&[(0.0, 0.0), (0.0, 50.0), (0.0, 0.0)], 1.0, &[0, 1, 2]);
    }

    #[test]
    fn every_dropped_point_stays_within_tolerance() {
        let points: Vec<(f64, f64)> = (0..2000)
            .map(|i| {
                let t = f64::from(i) / 40.0;
                (t * 10.0, (t.sin() * 30.0) + (f64::from(i % 7) * 0.05))
            })
            .collect();
        let kept = rdp_indices(&points, 0.75);
        assert!(kept.len() < points.len() / 4, "kept {}", kept.len());
        for pair in kept.windows(2) {
            for i in pair[0]..pair[1] {
                let d = distance_sq_to_segment(points[i], points[pair[0]], points[pair[1]]);
                assert!(d <= 0.75 * 0.75 + 1e-9, "point {i} is {d} px² off");
            }
        }
    }
}
