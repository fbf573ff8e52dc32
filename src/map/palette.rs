//! A map's picture as at most 256 colours: its own colours when it has no more, else its
//! most frequent ones with every other colour moved to the nearest of them.
//!
//! Owns the choice of palette and each pixel's index; the PNG bytes are `png_io`'s. A map is
//! flat areas (land, roads, label boxes, discs) plus anti-aliased edges: the flat colours are
//! few and cover most pixels, the edges make the count run into thousands. Keeping the
//! colours that carry the picture exact (see [`choose`]) keeps the land, the roads, the
//! markers and the legend exactly as drawn; only edge pixels move, to their nearest kept
//! colour. (NeuQuant, used before, shifted every
//! colour, the land's too, and cost more than drawing the map.) No I/O.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Most colours a palette holds.
pub const MAX_COLOURS: usize = 256;

/// A hasher for packed RGB keys: one multiplication, its high half folded into the low one
/// (the table picks a slot by the low bits and a tag by the top seven). SipHash cost more
/// than the rest of the count.
#[derive(Default)]
struct RgbHasher(u64);

impl Hasher for RgbHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8 | u64::from(*b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, v: u32) {
        let h = u64::from(v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 32);
    }
}

type Counts = HashMap<u32, u32, BuildHasherDefault<RgbHasher>>;

fn key(pixel: &[u8]) -> u32 {
    u32::from(pixel[0]) << 16 | u32::from(pixel[1]) << 8 | u32::from(pixel[2])
}

fn rgb_of(key: u32) -> [u8; 3] {
    [(key >> 16) as u8, (key >> 8) as u8, key as u8]
}

/// How many pixels of `rgb` have each colour.
fn count(rgb: &[u8]) -> Counts {
    let mut counts = Counts::default();
    // Runs of one colour are the rule on a map: count a run once it ends.
    let mut run: Option<(u32, u32)> = None;
    for pixel in rgb.chunks_exact(3) {
        let k = key(pixel);
        match &mut run {
            Some((colour, n)) if *colour == k => *n += 1,
            _ => {
                if let Some((colour, n)) = run {
                    *counts.entry(colour).or_insert(0) += n;
                }
                run = Some((k, 1));
            }
        }
    }
    if let Some((colour, n)) = run {
        *counts.entry(colour).or_insert(0) += n;
    }
    counts
}

/// Colours considered for a palette when a picture has more than 256: its most frequent.
const CANDIDATES: usize = 4096;

/// The palette (`3 × n` bytes, `n ≤ 256`) for `rgb` and each pixel's index written into
/// `indexes` (one byte a pixel). Returns whether the palette is exact: every pixel's colour
/// is in it. Otherwise see [`choose`]; every colour left out is given the nearest kept one
/// (squared RGB distance, ties to the lower index). A picture of more colours than a
/// 32 × 32 × 32 grid has cells (noise, photographs) gives each cell's colours the one
/// nearest its centre instead, so no picture costs more than one search per cell.
pub fn index(rgb: &[u8], indexes: &mut [u8]) -> (Vec<u8>, bool) {
    let counts = count(rgb);
    let exact = counts.len() <= MAX_COLOURS;
    let by_cell = counts.len() > CELLS + MAX_COLOURS;
    let mut by_count: Vec<(u32, u32)> = counts.into_iter().collect();
    let kept: Vec<u32> = if exact {
        let mut all: Vec<u32> = by_count.iter().map(|(colour, _)| *colour).collect();
        all.sort_unstable();
        all
    } else {
        by_count.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        by_count.truncate(CANDIDATES);
        choose(&by_count)
    };
    let mut lookup = Counts::default();
    lookup.reserve(kept.len());
    for (i, colour) in kept.iter().enumerate() {
        lookup.insert(*colour, i as u32);
    }
    let kept: Vec<[u8; 3]> = kept.into_iter().map(rgb_of).collect();
    let mut cells: Vec<u16> = Vec::new();
    let mut last = (u32::MAX, 0u8);
    for (pixel, index) in rgb.chunks_exact(3).zip(indexes.iter_mut()) {
        let k = key(pixel);
        if k != last.0 {
            let i = match lookup.get(&k) {
                Some(i) => *i as u8,
                None if by_cell => nearest_by_cell(&kept, &mut cells, pixel),
                None => {
                    let i = nearest(&kept, [pixel[0], pixel[1], pixel[2]]);
                    lookup.insert(k, u32::from(i));
                    i
                }
            };
            last = (k, i);
        }
        *index = last.1;
    }
    (kept.concat(), exact)
}

/// 256 of `candidates` (colour, pixels; most pixels first): each pick the colour whose
/// pixels would be moved furthest in all if it were left out — its pixels times its squared
/// distance to the nearest colour already kept. The most frequent colour comes first; flat
/// areas stay exact, and so does a small swatch of a colour far from all others (a legend's
/// red), which the most frequent colours alone would lose to anti-aliased greys.
fn choose(candidates: &[(u32, u32)]) -> Vec<u32> {
    // Larger than any squared RGB distance (3 × 255² < 2^18): nothing is kept yet.
    let mut distance: Vec<u64> = vec![1 << 20; candidates.len()];
    let colours: Vec<[u8; 3]> = candidates.iter().map(|(c, _)| rgb_of(*c)).collect();
    let mut kept = Vec::with_capacity(MAX_COLOURS);
    while kept.len() < MAX_COLOURS.min(candidates.len()) {
        let mut best = (0u64, usize::MAX);
        for (i, ((_, pixels), d)) in candidates.iter().zip(&distance).enumerate() {
            let loss = u64::from(*pixels) * d;
            if loss > best.0 {
                best = (loss, i);
            }
        }
        if best.1 == usize::MAX {
            break;
        }
        let chosen = colours[best.1];
        kept.push(candidates[best.1].0);
        for (d, c) in distance.iter_mut().zip(&colours) {
            *d = (*d).min(u64::from(squared_distance(c, chosen)));
        }
    }
    kept
}

fn squared_distance(a: &[u8; 3], b: [u8; 3]) -> u32 {
    (0..3)
        .map(|i| {
            let d = i32::from(a[i]) - i32::from(b[i]);
            (d * d) as u32
        })
        .sum()
}

/// Cells of the grid of colours searched by [`nearest_by_cell`]: 32 levels a channel.
const CELLS: usize = 32 * 32 * 32;

/// The kept colour nearest to the centre of `pixel`'s grid cell, searched once per cell.
fn nearest_by_cell(kept: &[[u8; 3]], cells: &mut Vec<u16>, pixel: &[u8]) -> u8 {
    const EMPTY: u16 = u16::MAX;
    if cells.is_empty() {
        cells.resize(CELLS, EMPTY);
    }
    let cell = usize::from(pixel[0] >> 3) << 10
        | usize::from(pixel[1] >> 3) << 5
        | usize::from(pixel[2] >> 3);
    if cells[cell] == EMPTY {
        let centre = [pixel[0] | 4, pixel[1] | 4, pixel[2] | 4];
        cells[cell] = u16::from(nearest(kept, centre));
    }
    cells[cell] as u8
}

/// The index of the colour of `kept` nearest to `to`.
fn nearest(kept: &[[u8; 3]], to: [u8; 3]) -> u8 {
    let mut best = (u32::MAX, 0usize);
    for (i, c) in kept.iter().enumerate() {
        let d = squared_distance(c, to);
        if d < best.0 {
            best = (d, i);
        }
    }
    best.1 as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(palette: &[u8], indexes: &[u8]) -> Vec<u8> {
        indexes
            .iter()
            .flat_map(|i| {
                let at = usize::from(*i) * 3;
                [palette[at], palette[at + 1], palette[at + 2]]
            })
            .collect()
    }

    /// `n` pixels of each colour, in runs and alone.
    fn picture(colours: &[([u8; 3], usize)]) -> Vec<u8> {
        let mut rgb = Vec::new();
        for (colour, n) in colours {
            for k in 0..*n {
                rgb.extend_from_slice(colour);
                if k % 7 == 3 {
                    // Break the run with the first colour now and then.
                    rgb.extend_from_slice(&colours[0].0);
                }
            }
        }
        rgb
    }

    #[test]
    fn up_to_256_colours_are_kept_exactly() {
        for n in [1usize, 2, 255, 256] {
            let colours: Vec<([u8; 3], usize)> = (0..n)
                .map(|i| ([i as u8, (i * 7) as u8, 255 - i as u8], 1 + i % 5))
                .collect();
            let rgb = picture(&colours);
            let mut indexes = vec![0u8; rgb.len() / 3];
            let (palette, exact) = index(&rgb, &mut indexes);
            assert!(exact, "{n} colours");
            assert_eq!(palette.len(), 3 * n);
            assert!(decoded(&palette, &indexes) == rgb, "{n} colours: changed");
        }
    }

    #[test]
    fn beyond_256_the_carrying_colours_stay_and_the_rest_go_to_the_nearest() {
        // Land and ink in bulk, 400 greys between them, more pixels each than the swatch,
        // and a small red swatch far from everything.
        let land = [242, 239, 233];
        let ink = [30, 30, 30];
        let red = [215, 25, 28];
        let mut colours = vec![(land, 50_000), (ink, 5_000), (red, 40)];
        for g in 0..400usize {
            let v = (31 + g / 2) as u8;
            colours.push(([v, v, (31 + g % 200) as u8], 60));
        }
        let rgb = picture(&colours);
        let mut indexes = vec![0u8; rgb.len() / 3];
        let (palette, exact) = index(&rgb, &mut indexes);
        assert!(!exact);
        assert_eq!(palette.len(), 3 * MAX_COLOURS);
        let kept: Vec<[u8; 3]> = palette
            .chunks_exact(3)
            .map(|c| [c[0], c[1], c[2]])
            .collect();
        for colour in [land, ink, red] {
            assert!(kept.contains(&colour), "{colour:?} was left out");
        }
        let back = decoded(&palette, &indexes);
        for (was, now) in rgb.chunks_exact(3).zip(back.chunks_exact(3)) {
            let was = [was[0], was[1], was[2]];
            let best = kept.iter().map(|k| squared_distance(k, was)).min().unwrap();
            let now = [now[0], now[1], now[2]];
            assert_eq!(squared_distance(&now, was), best, "{was:?} → {now:?}");
        }
    }
}
