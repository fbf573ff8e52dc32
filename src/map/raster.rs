//! A scanline rasteriser for the strokes a route map is made of: thick segments with round
//! caps ("capsules") and filled discs, written straight into an RGB buffer.
//!
//! Owns nothing but pixel spans. Plotters draws a thick line as a general polygon (allocate,
//! sort edges, per pixel calls), which made a day's track the bulk of a map's cost; a capsule
//! is convex, so each row it touches is one span computed in closed form. Round caps make
//! round joins for free, so a polyline is just its segments. Coordinates are buffer pixels
//! (the supersampled grid); a pixel is covered when its centre is. No I/O, no plotters.

/// A mutable RGB8 image, row-major, `width × height × 3` bytes.
pub struct Pixels<'a> {
    pub buf: &'a mut [u8],
    pub width: usize,
    pub height: usize,
    /// The last translucent colour's blend, kept for the next span of the same colour.
    blend: Option<Blend>,
}

/// What a translucent colour makes of every destination byte, channel by channel: the
/// arithmetic of a blend done once per colour instead of once per pixel (a fleet map draws
/// a thousand fan lines in one colour at 80 %: that arithmetic was most of their cost).
struct Blend {
    rgb: (u8, u8, u8),
    alpha_bits: u64,
    table: [[u8; 256]; 3],
}

impl Blend {
    fn new(rgb: (u8, u8, u8), alpha: f64) -> Blend {
        let a = alpha.clamp(0.0, 1.0);
        let mut table = [[0u8; 256]; 3];
        for (channel, src) in table.iter_mut().zip([rgb.0, rgb.1, rgb.2]) {
            for (dst, out) in channel.iter_mut().enumerate() {
                *out = round_to_u8(f64::from(src) * a + dst as f64 * (1.0 - a));
            }
        }
        Blend {
            rgb,
            alpha_bits: alpha.to_bits(),
            table,
        }
    }
}

impl<'a> Pixels<'a> {
    pub fn new(buf: &'a mut [u8], width: usize, height: usize) -> Pixels<'a> {
        Pixels {
            buf,
            width,
            height,
            blend: None,
        }
    }
}

impl Pixels<'_> {
    /// Fills the capsule of radius `radius` around segment `a`–`b` with `rgb` at opacity
    /// `alpha` (1.0 overwrites).
    pub fn capsule(
        &mut self,
        a: (f64, f64),
        b: (f64, f64),
        radius: f64,
        rgb: (u8, u8, u8),
        alpha: f64,
    ) {
        if radius.is_nan() || radius <= 0.0 || ![a.0, a.1, b.0, b.1].iter().all(|v| v.is_finite()) {
            return;
        }
        let top = ceil_at_least_zero(a.1.min(b.1) - radius - 0.5);
        let bottom = floor_at_most(a.1.max(b.1) + radius - 0.5, self.height as f64 - 1.0);
        if top > bottom {
            return;
        }
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let Some((top, bottom)) = self.rows_within_columns(a, (dx, dy), radius, (top, bottom))
        else {
            return;
        };
        let length_sq = dx * dx + dy * dy;
        let length = length_sq.sqrt();
        for row in top as usize..=bottom as usize {
            let y = row as f64 + 0.5;
            let mut span = Span::EMPTY;
            span.union(disc_span(a, radius, y));
            if length > 1e-9 {
                span.union(disc_span(b, radius, y));
                span.union(band_span(a, (dx, dy), length, length_sq, radius, y));
            }
            self.fill_span(row, span, rgb, alpha);
        }
    }

    /// The rows, within `rows`, where the capsule can reach the buffer's columns; `None`
    /// when it cannot. A covered pixel's centre lies within `radius` of a point of the
    /// segment, and that point lies within `radius` of the columns, so only the part of the
    /// segment inside the columns widened by `radius` (and a pixel of slack) has rows to
    /// paint. The rows kept are computed exactly as before; the rows left out had nothing
    /// in the buffer (the fleet map's fan lines run far outside the picture).
    fn rows_within_columns(
        &self,
        a: (f64, f64),
        (dx, dy): (f64, f64),
        radius: f64,
        (top, bottom): (f64, f64),
    ) -> Option<(f64, f64)> {
        let (left, right) = (-radius - 1.5, self.width as f64 + radius + 1.5);
        let (t0, t1) = if dx.abs() < 1e-9 {
            if a.0 < left || a.0 > right {
                return None;
            }
            (0.0, 1.0)
        } else {
            let (p, q) = ((left - a.0) / dx, (right - a.0) / dx);
            (p.min(q).max(0.0), p.max(q).min(1.0))
        };
        if t0 > t1 {
            return None;
        }
        let (y0, y1) = (a.1 + t0 * dy, a.1 + t1 * dy);
        let top = top.max(ceil_at_least_zero(y0.min(y1) - radius - 1.5));
        let bottom = bottom.min(floor_at_most(
            y0.max(y1) + radius + 0.5,
            self.height as f64 - 1.0,
        ));
        (top <= bottom).then_some((top, bottom))
    }

    /// A filled disc.
    pub fn disc(&mut self, centre: (f64, f64), radius: f64, rgb: (u8, u8, u8), alpha: f64) {
        self.capsule(centre, centre, radius, rgb, alpha);
    }

    /// Every segment of `points` as a capsule. With `alpha < 1` the joints are blended
    /// twice; callers use that only for thin outlines, where it cannot be seen.
    pub fn polyline(&mut self, points: &[(f64, f64)], radius: f64, rgb: (u8, u8, u8), alpha: f64) {
        match points {
            [] => {}
            [p] => self.disc(*p, radius, rgb, alpha),
            _ => {
                for pair in points.windows(2) {
                    self.capsule(pair[0], pair[1], radius, rgb, alpha);
                }
            }
        }
    }

    fn fill_span(&mut self, row: usize, span: Span, rgb: (u8, u8, u8), alpha: f64) {
        if span.is_empty() {
            return;
        }
        // Pixel i is covered when its centre i + 0.5 lies in [from, to].
        let first = ceil_at_least_zero(span.from - 0.5);
        let last = floor_at_most(span.to - 0.5, self.width as f64 - 1.0);
        if first > last {
            return;
        }
        let start = (row * self.width + first as usize) * 3;
        let end = (row * self.width + last as usize + 1) * 3;
        let pixels = &mut self.buf[start..end];
        if alpha >= 1.0 {
            // Sixteen pixels per copy of a fixed size (a quarter of a map's instructions went
            // to this fill, three bytes at a time).
            let mut pattern = [0u8; 48];
            for p in pattern.chunks_exact_mut(3) {
                p.copy_from_slice(&[rgb.0, rgb.1, rgb.2]);
            }
            let mut chunks = pixels.chunks_exact_mut(48);
            for chunk in &mut chunks {
                chunk.copy_from_slice(&pattern);
            }
            let rest = chunks.into_remainder();
            rest.copy_from_slice(&pattern[..rest.len()]);
        } else {
            let alpha_bits = alpha.to_bits();
            let blend = match &mut self.blend {
                Some(kept) if kept.rgb == rgb && kept.alpha_bits == alpha_bits => kept,
                other => other.insert(Blend::new(rgb, alpha)),
            };
            let [r, g, b] = &blend.table;
            for p in pixels.chunks_exact_mut(3) {
                p[0] = r[usize::from(p[0])];
                p[1] = g[usize::from(p[1])];
                p[2] = b[usize::from(p[2])];
            }
        }
    }
}

/// `v.ceil().max(0.0)`, without the library call `ceil` is on the baseline x86-64 target
/// (four of them per row of every capsule were 7 % of a map's instructions).
fn ceil_at_least_zero(v: f64) -> f64 {
    if v.is_nan() || v <= 0.0 {
        0.0
    } else if v >= 4_503_599_627_370_496.0 {
        // 2^52 and above (and infinity): already whole.
        v
    } else {
        let whole = v as u64 as f64;
        if whole < v { whole + 1.0 } else { whole }
    }
}

/// `v.round() as u8` for a blend `v` (halves away from zero; NaN gives 0, as the cast
/// does), without the library call: three of them a pixel made `round` 5 % of a fleet
/// map's instructions (a thousand translucent lines). From one half up, `v + 0.5` is exact
/// within `v`'s binade and cannot round across a whole number, so truncating it is rounding
/// `v`; below one half the answer is 0 (there `v + 0.5` could round up to 1).
fn round_to_u8(v: f64) -> u8 {
    if v < 0.5 { 0 } else { (v + 0.5) as u8 }
}

/// `v.floor().min(most)` for a whole `most` (a last row or column): the same answer as
/// the library's `floor`, which is a call on the baseline x86-64 target.
fn floor_at_most(v: f64, most: f64) -> f64 {
    if v.is_nan() || v >= most {
        most
    } else if v >= 0.0 {
        v as u64 as f64
    } else {
        v.floor()
    }
}

/// A closed interval of x on one row; empty when `from > to`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Span {
    from: f64,
    to: f64,
}

impl Span {
    const EMPTY: Span = Span {
        from: f64::INFINITY,
        to: f64::NEG_INFINITY,
    };

    fn is_empty(&self) -> bool {
        self.from > self.to
    }

    /// The parts of a convex shape meet on every row they share, so the union of their
    /// spans is a span.
    fn union(&mut self, other: Span) {
        if !other.is_empty() {
            self.from = self.from.min(other.from);
            self.to = self.to.max(other.to);
        }
    }

    fn intersect(self, other: Span) -> Span {
        Span {
            from: self.from.max(other.from),
            to: self.to.min(other.to),
        }
    }
}

fn disc_span(c: (f64, f64), r: f64, y: f64) -> Span {
    let dy = y - c.1;
    let sq = r * r - dy * dy;
    if sq < 0.0 {
        return Span::EMPTY;
    }
    let half = sq.sqrt();
    Span {
        from: c.0 - half,
        to: c.0 + half,
    }
}

/// The row's span of the rectangle swept by the segment: points within `r` of the line
/// whose projection falls on the segment. Both conditions are linear in x.
fn band_span(a: (f64, f64), d: (f64, f64), length: f64, length_sq: f64, r: f64, y: f64) -> Span {
    let ry = y - a.1;
    // |cross(d, p − a)| ≤ r·length, with cross = d.x·ry − d.y·rx.
    let across = linear_span(-d.1, d.0 * ry, -r * length, r * length);
    // 0 ≤ dot(d, p − a) ≤ length², with dot = d.x·rx + d.y·ry.
    let along = linear_span(d.0, d.1 * ry, 0.0, length_sq);
    across.intersect(along).shift(a.0)
}

impl Span {
    fn shift(self, by: f64) -> Span {
        if self.is_empty() {
            self
        } else {
            Span {
                from: self.from + by,
                to: self.to + by,
            }
        }
    }
}

/// The `rx` with `lo ≤ k·rx + c ≤ hi`.
fn linear_span(k: f64, c: f64, lo: f64, hi: f64) -> Span {
    if k.abs() < 1e-12 {
        return if (lo..=hi).contains(&c) {
            Span {
                from: f64::NEG_INFINITY,
                to: f64::INFINITY,
            }
        } else {
            Span::EMPTY
        };
    }
    let (p, q) = ((lo - c) / k, (hi - c) / k);
    Span {
        from: p.min(q),
        to: p.max(q),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RED: (u8, u8, u8) = (255, 0, 0);

    fn covered(draw: impl Fn(&mut Pixels<'_>), w: usize, h: usize) -> Vec<(usize, usize)> {
        let mut buf = vec![0u8; w * h * 3];
        draw(&mut Pixels::new(&mut buf, w, h));
        (0..w * h)
            .filter(|i| buf[i * 3] == 255)
            .map(|i| (i % w, i / w))
            .collect()
    }

    /// The definition the fast path must match: a pixel is covered when its centre is within
    /// `r` of the segment.
    fn brute(a: (f64, f64), b: (f64, f64), r: f64, w: usize, h: usize) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for y in 0..h {
            for x in 0..w {
                let p = (x as f64 + 0.5, y as f64 + 0.5);
                let (dx, dy) = (b.0 - a.0, b.1 - a.1);
                let len_sq = dx * dx + dy * dy;
                let t = if len_sq == 0.0 {
                    0.0
                } else {
                    (((p.0 - a.0) * dx + (p.1 - a.1) * dy) / len_sq).clamp(0.0, 1.0)
                };
                let (qx, qy) = (a.0 + t * dx - p.0, a.1 + t * dy - p.1);
                if qx * qx + qy * qy <= r * r {
                    out.push((x, y));
                }
            }
        }
        out
    }

    #[test]
    fn capsules_cover_exactly_the_pixels_within_the_radius() {
        let check = |a: (f64, f64), b: (f64, f64), r: f64| {
            let got = covered(|p| p.capsule(a, b, r, RED, 1.0), 40, 30);
            let want = brute(a, b, r, 40, 30);
            // Closed-form spans and the brute force may differ on a centre exactly at the
            // boundary; allow a pixel or two of rounding, no more.
            let diff = got.iter().filter(|p| !want.contains(p)).count()
                + want.iter().filter(|p| !got.contains(p)).count();
            assert!(diff <= 2, "{a:?}→{b:?} r {r}: {diff} pixels differ");
            assert!(!want.is_empty());
        };
        check((5.0, 5.0), (30.0, 20.0), 3.0); // diagonal
        check((5.0, 10.0), (35.0, 10.0), 2.5); // horizontal
        check((20.0, 2.0), (20.0, 28.0), 4.0); // vertical
        check((12.3, 14.7), (12.3, 14.7), 5.0); // a disc
        check((-10.0, -5.0), (25.0, 40.0), 3.0); // clipped on every side
        check((33.0, 4.0), (3.0, 26.0), 1.0); // thin, right to left
    }

    /// The row and column bounds are the library's `ceil` and `floor`, clamped, for every
    /// kind of value they meet.
    #[test]
    fn bounds_round_as_the_library_does() {
        let values = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -1.0,
            -0.5,
            -0.0,
            0.0,
            1e-12,
            0.5,
            1.0,
            1.5,
            2.0 - 1e-15,
            799.5,
            1199.0,
            1199.25,
            4_503_599_627_370_495.5,
            1e300,
            f64::INFINITY,
            f64::NAN,
        ];
        for v in values {
            assert_eq!(ceil_at_least_zero(v), v.ceil().max(0.0), "ceil {v}");
            for most in [0.0, 1199.0, 1599.0] {
                assert_eq!(
                    floor_at_most(v, most),
                    v.floor().min(most),
                    "floor {v} {most}"
                );
            }
        }
    }

    /// An opaque span of any length paints exactly its pixels, in the colour's byte order.
    #[test]
    fn opaque_spans_of_every_length_paint_exactly_their_pixels() {
        for length in 1..=40usize {
            let mut buf = vec![9u8; 50 * 3];
            let mut pixels = Pixels::new(&mut buf, 50, 1);
            let span = Span {
                from: 3.5,
                to: 3.5 + (length - 1) as f64,
            };
            pixels.fill_span(0, span, (1, 2, 3), 1.0);
            for (i, p) in buf.chunks_exact(3).enumerate() {
                let inside = (3..3 + length).contains(&i);
                let want: &[u8] = if inside { &[1, 2, 3] } else { &[9, 9, 9] };
                assert_eq!(p, want, "length {length}, pixel {i}");
            }
        }
    }

    #[test]
    fn blends_round_as_the_library_does() {
        for alpha in [0.0, 0.16, 0.5, 0.8, 0.82, 0.9, 1.0 / 3.0, 1.0] {
            for src in 0..=255u8 {
                for dst in 0..=255u8 {
                    let v = f64::from(src) * alpha + f64::from(dst) * (1.0 - alpha);
                    assert_eq!(round_to_u8(v), v.round() as u8, "{v}");
                }
            }
        }
        let edges = [0.0, 0.5, 1.5, 2.5, 0.49999999999999994, 1.4999999999999998];
        for v in edges
            .into_iter()
            .chain([3.4999999999999996, 254.5, 255.0, 1e300])
        {
            assert_eq!(round_to_u8(v), v.round() as u8, "{v}");
        }
        assert_eq!(round_to_u8(f64::NAN), 0);
    }

    /// Strokes from inside the buffer to far outside it, at every angle, cover the pixels
    /// within their radius and only those (the rows outside the columns are skipped).
    #[test]
    fn strokes_that_leave_the_buffer_cover_what_they_reach() {
        for step in 0..48 {
            let angle = f64::from(step) * std::f64::consts::TAU / 48.0 + 0.01;
            for (length, r) in [(3000.0, 1.0), (60.0, 2.5), (1e6, 1.5)] {
                let a = (20.3, 15.7);
                let b = (a.0 + length * angle.cos(), a.1 + length * angle.sin());
                for (from, to) in [(a, b), (b, a)] {
                    let got = covered(|p| p.capsule(from, to, r, RED, 1.0), 40, 30);
                    let want = brute(from, to, r, 40, 30);
                    let diff = got.iter().filter(|p| !want.contains(p)).count()
                        + want.iter().filter(|p| !got.contains(p)).count();
                    assert!(diff <= 2, "{from:?}→{to:?} r {r}: {diff} pixels differ");
                    assert!(!want.is_empty());
                }
            }
        }
        // Wholly beside the buffer, in rows it spans: nothing.
        let got = covered(
            |p| p.capsule((-50.0, -10.0), (-45.0, 80.0), 2.0, RED, 1.0),
            40,
            30,
        );
        assert!(got.is_empty());
    }

    /// Translucent spans blend each pixel as the formula says, whatever colour and opacity
    /// came before (the blend kept from the last span must not serve another).
    #[test]
    fn translucent_spans_blend_every_byte_by_the_formula() {
        let strokes = [
            ((26u8, 26u8, 26u8), 0.8),
            ((123, 50, 148), 0.9),
            ((26, 26, 26), 0.16),
            ((255, 0, 7), 1.0 / 3.0),
        ];
        for (rgb, alpha) in strokes {
            // Kept from the span before: the same colour at another opacity, another colour
            // at the same opacity.
            let other_rgb = (rgb.0 ^ 0x40, rgb.1, rgb.2);
            for (before_rgb, before_alpha) in [(rgb, 0.5), (other_rgb, alpha)] {
                // Every destination byte once, in each channel; the last pixel is scratch.
                let mut buf: Vec<u8> = (0..=255u8).flat_map(|v| [v, 255 - v, v ^ 0x5a]).collect();
                buf.extend([0, 0, 0]);
                let before = buf.clone();
                let mut pixels = Pixels::new(&mut buf, 257, 1);
                let scratch = Span {
                    from: 256.5,
                    to: 256.5,
                };
                pixels.fill_span(0, scratch, before_rgb, before_alpha);
                let all = Span {
                    from: 0.5,
                    to: 255.5,
                };
                pixels.fill_span(0, all, rgb, alpha);
                for (i, (now, was)) in buf.iter().zip(&before).take(256 * 3).enumerate() {
                    let src = [rgb.0, rgb.1, rgb.2][i % 3];
                    let want = (f64::from(src) * alpha + f64::from(*was) * (1.0 - alpha)).round();
                    assert_eq!(f64::from(*now), want, "byte {i}, {rgb:?} at {alpha}");
                }
            }
        }
    }

    #[test]
    fn translucent_fill_blends() {
        let mut buf = vec![100u8; 4 * 4 * 3];
        Pixels::new(&mut buf, 4, 4).disc((2.0, 2.0), 1.0, (200, 200, 200), 0.5);
        assert_eq!(buf[(4 + 1) * 3], 150);
        assert_eq!(buf[0], 100);
    }

    #[test]
    fn nonsense_coordinates_draw_nothing() {
        let got = covered(
            |p| {
                p.capsule((f64::NAN, 1.0), (3.0, 3.0), 2.0, RED, 1.0);
                p.capsule((1.0, 1.0), (3.0, 3.0), -2.0, RED, 1.0);
                p.capsule((1e12, 1e12), (2e12, 2e12), 2.0, RED, 1.0);
            },
            8,
            8,
        );
        assert!(got.is_empty());
    }
}
