//! Rounding to whole numbers as `f64::round` does, without its library call.
//!
//! Owns [`round`]: half away from zero, bit for bit `f64::round`'s answer for every input.
//! The build's baseline x86-64 target has no rounding instruction, so `f64::round` is a call
//! into a software routine of about 24 instructions; the simulator rounds each record's five
//! reported values and the encoder each row's five stored ones, ~10 calls a position, which
//! made the routine 4 % of a worker's instructions on the scale scenario (docs/rendimiento.md).

/// 2⁵²: from here on every `f64` is a whole number, and below it adding 2⁵² leaves no
/// fraction.
const WHOLE_FROM: f64 = 4_503_599_627_370_496.0;

/// `x.round()`: the nearest whole number, halves away from zero, the sign of zero kept; NaN
/// and infinities as they are. For `a = |x|` below 2⁵², `a + 2⁵²` lies where the floats are
/// the whole numbers, so the addition rounds `a` to the nearest one, a half to the even one,
/// and taking 2⁵² off again is exact. That differs from halves away from zero only on a half
/// rounded down to an even number, where `a - r` (exact: `r` is within a half of `a`) is one
/// half. From 2⁵² on, `x` is whole already (or not a number). Cheaper than truncating through
/// an integer, whose saturating conversion costs more than the rounding itself.
#[inline]
pub fn round(x: f64) -> f64 {
    let a = x.abs();
    if a < WHOLE_FROM {
        let nearest_even = (a + WHOLE_FROM) - WHOLE_FROM;
        let r = if a - nearest_even == 0.5 {
            nearest_even + 1.0
        } else {
            nearest_even
        };
        r.copysign(x)
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn same(x: f64) -> bool {
        round(x).to_bits() == x.round().to_bits() || (x.is_nan() && round(x).is_nan())
    }

    /// The edges: halves either side of zero, the last fractions below 2⁵², the neighbours of
    /// every boundary, signed zeros, infinities and NaN.
    #[test]
    fn the_edges_round_as_the_library_does() {
        let mut edges = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            -1.5,
            2.5,
            -2.5,
            0.499_999_999_999_999_94,
            -0.499_999_999_999_999_94,
            WHOLE_FROM,
            -WHOLE_FROM,
            WHOLE_FROM - 0.5,
            -(WHOLE_FROM - 0.5),
            WHOLE_FROM / 2.0 - 0.5,
            WHOLE_FROM / 2.0 + 0.5,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            9.223_372_036_854_776e18,
            1.0e300,
        ];
        let around: Vec<f64> = edges
            .iter()
            .flat_map(|x| {
                let up = f64::from_bits(x.to_bits().wrapping_add(1));
                let down = f64::from_bits(x.to_bits().wrapping_sub(1));
                [up, down]
            })
            .collect();
        edges.extend(around);
        for x in edges {
            assert!(same(x), "{x:e}: {} against {}", round(x), x.round());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        /// Any bit pattern at all.
        #[test]
        fn any_float_rounds_as_the_library_does(bits: u64) {
            let x = f64::from_bits(bits);
            prop_assert!(same(x), "{x:e}: {} against {}", round(x), x.round());
        }

        /// The values the simulator and the encoder round: coordinates, speeds, headings and
        /// odometers scaled to their last stored digit, with the halves in between.
        #[test]
        fn scaled_readings_round_as_the_library_does(
            value in -2.0e9..2.0e9f64,
            scale in prop_oneof![Just(1.0), Just(10.0), Just(1000.0), Just(1e6)],
            half: bool,
        ) {
            let x = if half { (value * scale).trunc() + 0.5 } else { value * scale };
            prop_assert!(same(x), "{x:e}: {} against {}", round(x), x.round());
        }
    }
}
