//! How a position is stored: the fixed-point encoding of `posiciones` and its inverse.
//!
//! Owns the one place where a report becomes table columns and columns become an engine
//! [`Fix`], so the simulator's in-memory analysis and `flota analizar` reading the file see
//! exactly the same numbers.

use crate::engine::Fix;
use crate::geometry::rounding::round;
use crate::sim::Report;

/// The stored columns of one report (besides the vehicle, fix time and sequence).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StoredRow {
    pub delay_s: i64,
    pub lat_e6: i64,
    pub lon_e6: i64,
    pub speed_kmh: f64,
    pub heading_deg: i64,
    pub ignition: bool,
    /// [`NO_ODOMETER`] when the tracker sent none.
    pub odometer_m: i64,
}

/// `odometro_m` of a report without an odometer (a phone): the engine then measures the
/// day's kilometres by GPS alone, as it does for an odometer it cannot trust.
pub const NO_ODOMETER: i64 = -1;

/// What a tracker said about one fix, in the units it is stored in or finer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    pub lat: f64,
    pub lon: f64,
    pub speed_kmh: f64,
    pub heading_deg: f64,
    pub ignition: bool,
    pub odometer_m: Option<f64>,
}

impl StoredRow {
    /// The stored form of a reading delivered `delay_s` after its fix: microdegrees, speed to
    /// 0.1 km/h (the simulator's and most trackers' resolution, so a speed that travelled in
    /// knots comes back as sent), whole degrees and metres. Inlined into the simulator's
    /// loop over a unit's reports, which it is most of.
    #[inline]
    pub fn encode(r: &Reading, delay_s: i64) -> StoredRow {
        // `f64::round`'s answers without its library call (five per row).
        StoredRow {
            delay_s,
            lat_e6: round(r.lat * 1e6) as i64,
            lon_e6: round(r.lon * 1e6) as i64,
            speed_kmh: round(r.speed_kmh * 10.0) / 10.0,
            heading_deg: round(r.heading_deg) as i64 % 360,
            ignition: r.ignition,
            odometer_m: r
                .odometer_m
                .map_or(NO_ODOMETER, |m| (round(m) as i64).max(0)),
        }
    }
}

impl From<&Report> for StoredRow {
    #[inline]
    fn from(r: &Report) -> Self {
        let reading = Reading {
            lat: r.lat,
            lon: r.lon,
            speed_kmh: r.speed_kmh,
            heading_deg: r.heading_deg,
            ignition: r.ignition,
            odometer_m: r.odometer_km.map(|km| km * 1000.0),
        };
        StoredRow::encode(&reading, r.received_utc - r.ts_utc)
    }
}

impl StoredRow {
    /// The fix the engine sees for this row.
    pub fn to_fix(&self, ts_utc: i64) -> Fix {
        Fix {
            ts_utc,
            lat: self.lat_e6 as f64 / 1e6,
            lon: self.lon_e6 as f64 / 1e6,
            speed_kmh: self.speed_kmh,
            heading_deg: self.heading_deg as f64,
            ignition: self.ignition,
            odometer_m: (self.odometer_m >= 0).then_some(self.odometer_m),
        }
    }
}

/// The columns of `posiciones` a fix is read from, in [`fix_of_row`]'s order.
pub(super) const FIX_COLUMNS: &str =
    "ts_utc, lat_e6, lon_e6, velocidad_kmh, rumbo_grados, ignicion, odometro_m";

/// The fix a row selected with [`FIX_COLUMNS`] holds: [`StoredRow::to_fix`] on the stored
/// columns (the delivery delay plays no part in a fix).
pub(super) fn fix_of_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Fix> {
    fix_of_row_at(r, 0)
}

/// [`fix_of_row`] for [`FIX_COLUMNS`] selected from column `at` on.
pub(super) fn fix_of_row_at(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Fix> {
    let row = StoredRow {
        delay_s: 0,
        lat_e6: r.get(at + 1)?,
        lon_e6: r.get(at + 2)?,
        speed_kmh: r.get(at + 3)?,
        heading_deg: r.get(at + 4)?,
        ignition: r.get::<_, i64>(at + 5)? != 0,
        odometer_m: r.get(at + 6)?,
    };
    Ok(row.to_fix(r.get(at)?))
}

/// One row of `posiciones` as written: its key (besides the vehicle) and its stored columns.
/// A report is encoded once, where it is simulated: the writer binds these as they are, and
/// the engine's fixes are read from the same values ([`fixes_of_rows_into`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PositionRow {
    pub ts_utc: i64,
    pub sequence: u8,
    pub row: StoredRow,
}

impl From<&Report> for PositionRow {
    #[inline]
    fn from(r: &Report) -> Self {
        PositionRow {
            ts_utc: r.ts_utc,
            sequence: r.sequence,
            row: StoredRow::from(r),
        }
    }
}

/// [`fixes_of`] for rows already encoded (and, like the table's, holding only records with a
/// fix): fix-time order, duplicates dropped; the same fixes, without encoding again. Into
/// `out`, emptied first: `flota simular`'s workers keep one buffer from unit to unit, whose
/// pages are not taken fresh from the system for every unit (docs/rendimiento.md, session
/// seventeen).
pub fn fixes_of_rows_into(rows: &[PositionRow], out: &mut Vec<Fix>) {
    out.clear();
    let firsts = rows.iter().filter(|r| r.sequence == 0);
    // Rows in key order (what the writer takes) are in fix-time order already: nothing to
    // sort, as a stable sort would leave them.
    if firsts.clone().is_sorted_by_key(|r| r.ts_utc) {
        out.extend(firsts.map(|r| r.row.to_fix(r.ts_utc)));
        return;
    }
    let mut sorted: Vec<&PositionRow> = firsts.collect();
    // Stable, as in `fixes_of`.
    sorted.sort_by_key(|r| r.ts_utc);
    out.extend(sorted.iter().map(|r| r.row.to_fix(r.ts_utc)));
}

/// A unit's reports as the engine would read them back from the table: fix-time order,
/// duplicates (sequence > 0) and records without a fix dropped.
pub fn fixes_of(reports: &[Report]) -> Vec<Fix> {
    let mut sorted: Vec<&Report> = reports
        .iter()
        .filter(|r| r.sequence == 0 && r.valid)
        .collect();
    sorted.sort_by_key(|r| r.ts_utc);
    sorted
        .iter()
        .map(|r| StoredRow::from(*r).to_fix(r.ts_utc))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(ts_utc: i64, sequence: u8, lat: f64, valid: bool) -> Report {
        Report {
            ts_utc,
            sequence,
            received_utc: ts_utc + i64::from(sequence) * 7,
            lat,
            lon: -3.703_790_4,
            speed_kmh: 37.25,
            heading_deg: 359.6,
            ignition: true,
            odometer_km: Some(1234.5678),
            valid,
        }
    }

    /// The rows `flota simular` stores (records with a fix, in key order), encoded once, give
    /// the engine exactly the fixes `fixes_of` makes of the reports: duplicates dropped, fix
    /// time order, the same rounding.
    #[test]
    fn fixes_of_rows_are_the_fixes_of_the_reports_in_a_buffer_emptied_first() {
        let reports = vec![
            report(30, 0, 40.416_775_5, true),
            report(10, 0, 40.416_1, true),
            report(10, 1, 40.416_1, true),
            report(20, 0, 40.499_999_5, false),
            report(25, 0, 40.000_000_49, true),
            report(25, 1, 40.000_000_49, true),
        ];
        let mut stored: Vec<Report> = reports.iter().filter(|r| r.valid).copied().collect();
        stored.sort_by_key(|r| (r.ts_utc, r.sequence));
        let rows: Vec<PositionRow> = stored.iter().map(PositionRow::from).collect();
        let mut fixes = vec![fixes_of(&reports)[0]];
        fixes_of_rows_into(&rows, &mut fixes);
        assert_eq!(fixes, fixes_of(&reports));
        assert_eq!(
            fixes.iter().map(|f| f.ts_utc).collect::<Vec<_>>(),
            [10, 25, 30]
        );
        assert_eq!(rows.len(), 5);
        assert_eq!(rows[1].row, StoredRow::from(&stored[1]));
        // Rows out of key order (another caller's): the same fixes.
        let mut reversed = rows.clone();
        reversed.reverse();
        let mut again = Vec::new();
        fixes_of_rows_into(&reversed, &mut again);
        assert_eq!(again, fixes);
    }
}
