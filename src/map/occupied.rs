//! Where labels may not go: the rectangles already taken on a map, found through a coarse
//! grid so that asking whether a box is free looks only at the rectangles near it.
//!
//! Owns that index, nothing else; the answer is the same as checking every rectangle (a
//! fleet map of 1,000 units asks ~24,000 times against ~2,000 rectangles, which was 5 % of
//! its instructions done one by one). No I/O.

use super::draw::{HEIGHT, Rect, WIDTH};

/// Side of a grid cell, output pixels: about one label's height, a third of its width.
const CELL_PX: f64 = 32.0;
const COLUMNS: usize = (WIDTH as usize).div_ceil(CELL_PX as usize);
const ROWS: usize = (HEIGHT as usize).div_ceil(CELL_PX as usize);

/// The taken rectangles. One outside the picture counts in the border cells, so two
/// rectangles that overlap anywhere share a cell.
#[derive(Debug)]
pub struct Occupied {
    rects: Vec<Rect>,
    /// For each cell, row by row, the rectangles that touch it.
    cells: Vec<Vec<u32>>,
}

impl Default for Occupied {
    fn default() -> Self {
        Occupied {
            rects: Vec::new(),
            cells: vec![Vec::new(); COLUMNS * ROWS],
        }
    }
}

/// The cells a span `from..to` of one axis touches, clamped to `0..count`.
fn cells_of(from: f64, to: f64, count: usize) -> std::ops::RangeInclusive<usize> {
    let last = (count - 1) as f64;
    let cell = |v: f64| (v / CELL_PX).floor().clamp(0.0, last) as usize;
    cell(from)..=cell(to)
}

impl Occupied {
    pub fn push(&mut self, r: Rect) {
        let index = self.rects.len() as u32;
        self.rects.push(r);
        for row in cells_of(r.y0, r.y1, ROWS) {
            for column in cells_of(r.x0, r.x1, COLUMNS) {
                self.cells[row * COLUMNS + column].push(index);
            }
        }
    }

    /// Whether `r` overlaps any taken rectangle.
    pub fn overlaps(&self, r: &Rect) -> bool {
        cells_of(r.y0, r.y1, ROWS).any(|row| {
            cells_of(r.x0, r.x1, COLUMNS).any(|column| {
                self.cells[row * COLUMNS + column]
                    .iter()
                    .any(|i| self.rects[*i as usize].overlaps(r))
            })
        })
    }
}

impl Extend<Rect> for Occupied {
    fn extend<T: IntoIterator<Item = Rect>>(&mut self, rects: T) {
        for r in rects {
            self.push(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_answers_as_checking_every_rectangle() {
        let mut state = 99u32;
        let mut next = |range: f64| {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
            f64::from(state >> 8) / f64::from(1u32 << 24) * range
        };
        let mut occupied = Occupied::default();
        let mut all = Vec::new();
        for round in 0..3000 {
            // Some reach past the picture's edges, some are tiny, some large.
            let r = Rect::new(
                next(1000.0) - 100.0,
                next(800.0) - 100.0,
                next(if round % 10 == 0 { 300.0 } else { 60.0 }),
                next(30.0),
            );
            let expected = all.iter().any(|o: &Rect| o.overlaps(&r));
            assert_eq!(occupied.overlaps(&r), expected, "{r:?} after {round}");
            if round % 2 == 0 {
                occupied.push(r);
                all.push(r);
            }
        }
        assert!(all.iter().all(|r| occupied.overlaps(r)));
    }
}
