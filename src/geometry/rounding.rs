//! Rounding to whole numbers on the hot paths: [`round`] is `f64::round`, bit for bit, at a
//! fraction of its cost on this target.
//!
//! Owns only that arithmetic. Every report the simulator makes and every row the store encodes
//! rounds five numbers (microdegrees, tenths of km/h, degrees, metres); without SSE4.1 in the
//! baseline x86-64 target, `f64::round` is a call into a software routine of a few dozen
//! instructions, where a truncating conversion and two comparisons do. What is rounded, and
//! to what, belongs to the callers.

/// `x.round()` (half away from zero, the sign of zero kept), the same bits.
#[inline]
pub fn round(x: f64) -> f64 {
    // Below 2^52 a double may have a fraction, and fits an i64: truncate through it (exact),
    // then the fraction `x - whole` is exact too and says which way to go. Larger numbers,
    // infinities and NaN are left to the library.
    let fast = x.abs() < 4_503_599_627_370_496.0;
    if !fast {
        return x.round();
    }
    let whole = (x as i64 as f64).copysign(x);
    let fraction = x - whole;
    if fraction >= 0.5 {
        whole + 1.0
    } else if fraction <= -0.5 {
        whole - 1.0
    } else {
        whole
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same bits as `f64::round` on the halves and their neighbours, signed zeros, the
    /// edges of the fast path, infinities, NaN, and a sweep of numbers of every magnitude.
    #[test]
    fn rounds_as_the_library_does_to_the_bit() {
        let mut cases = vec![
            0.0,
            -0.0,
            f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MAX,
            4_503_599_627_370_496.0,
            9_007_199_254_740_993.0,
        ];
        for whole in [
            0.0,
            1.0,
            2.0,
            7.0,
            1e6,
            14_585_000.0,
            4_503_599_627_370_495.0,
        ] {
            for x in [whole - 0.5, whole + 0.5, whole, whole + 0.3, whole - 0.7] {
                let x: f64 = x;
                cases.extend([x, x.next_up(), x.next_down()]);
            }
        }
        let mut x = 1e-9f64;
        while x < 1e17 {
            cases.extend([x * 1.37, x * 0.51, x * 0.49]);
            x *= 1.9;
        }
        for x in cases.clone() {
            cases.push(-x);
        }
        for x in cases {
            assert_eq!(round(x).to_bits(), x.round().to_bits(), "{x:e}");
        }
    }
}
