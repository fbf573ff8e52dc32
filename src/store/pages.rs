//! The `posiciones` B-tree written page by page, as a sorted bulk load, into a file SQLite made.
//!
//! Owns the one place where flota writes SQLite's file format itself (docs/datos.md). Inserting
//! the positions row by row cost the writer thread ~3,000 instructions a row inside SQLite (the
//! statement's opcodes, a seek, the right edge's rebalancing); rows that arrive in key order
//! need none of that: their leaves can be filled left to right and streamed to the end of the
//! file, and the interior levels built as leaves complete, the way SQLite's own `CREATE INDEX`
//! loads a sorted index. SQLite makes the file (page 1, the schema, every root page), and
//! the tree built here ends in `posiciones`' own root page; the header's page count is set
//! last. `posiciones` is a `WITHOUT ROWID` table, so its B-tree is an index B-tree whose
//! entries are the whole rows (key columns first, which the schema already puts first), and
//! an interior cell holds a real entry, not a copy: the entry after each full page goes up a
//! level. Values are encoded exactly as SQLite encodes them (its smallest integer serial
//! type; every speed as an 8-byte float), so a file written here holds the
//! records the row-by-row insert would have stored. Memory: one page per level.

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::encoding::PositionRow;

/// The leaf page flag of an index B-tree.
const LEAF: u8 = 0x0A;
/// The interior page flag of an index B-tree.
const INTERIOR: u8 = 0x02;
/// SQLite's lock byte (`PENDING_BYTE`): the page holding it is never used.
const LOCK_BYTE: usize = 0x4000_0000;
/// Pages written through one buffered write.
const PAGES_PER_WRITE: usize = 16;

/// Where the rows go and how pages look there, read from the file's header.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub page_size: usize,
    /// Bytes of a page SQLite uses (the page size less the reserved bytes at its end).
    pub usable: usize,
    /// Pages in the file before the tree's pages (they are appended after).
    pub pages: u32,
    /// `posiciones`' root page, which gets the tree's top page.
    pub root: u32,
    /// The page holding byte 2^30 (SQLite's lock byte): never a B-tree page in a file past
    /// 1 GiB, so it is skipped, written as zeros, as SQLite itself skips it.
    pub lock_page: u32,
}

/// Why a row cannot go into the tree.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// A key not after the previous row's: a repeated position, or rows out of order.
    #[error("clave repetida o fuera de orden")]
    Order,
    /// A value SQLite would store as NULL (a NaN speed) in a NOT NULL column.
    #[error("un valor nulo")]
    Null,
    #[error("{}", io_words(.0))]
    Io(#[from] io::Error),
}

/// A disk error in Spanish.
pub fn io_words(e: &io::Error) -> &'static str {
    match e.kind() {
        io::ErrorKind::StorageFull => "no queda espacio en el disco",
        io::ErrorKind::PermissionDenied => "sin permiso",
        io::ErrorKind::ReadOnlyFilesystem => "el archivo o su carpeta son de solo lectura",
        _ => "error de entrada/salida del disco",
    }
}

/// One page being filled: cells from the end down, their pointers after the header.
struct Page {
    bytes: Vec<u8>,
    header: usize,
    cells: usize,
    /// Where the lowest cell starts.
    content: usize,
    /// The last cell's length (for [`Page::pop`]).
    last: usize,
}

impl Page {
    fn new(layout: &Layout, flag: u8) -> Page {
        let header = if flag == LEAF { 8 } else { 12 };
        let mut bytes = vec![0; layout.page_size];
        bytes[0] = flag;
        Page {
            bytes,
            header,
            cells: 0,
            content: layout.usable,
            last: 0,
        }
    }

    fn fits(&self, cell: usize) -> bool {
        self.header + 2 * (self.cells + 1) + cell <= self.content
    }

    /// Appends `parts` as one cell; the caller checked [`Page::fits`].
    fn push(&mut self, parts: &[&[u8]]) {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        self.content -= len;
        let mut at = self.content;
        for part in parts {
            self.bytes[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        let pointer = self.header + 2 * self.cells;
        self.bytes[pointer..pointer + 2].copy_from_slice(&(self.content as u16).to_be_bytes());
        self.cells += 1;
        self.last = len;
    }

    /// Takes the last cell off (only once after a push).
    fn pop(&mut self) -> Vec<u8> {
        let cell = self.bytes[self.content..self.content + self.last].to_vec();
        self.bytes[self.content..self.content + self.last].fill(0);
        self.content += self.last;
        self.cells -= 1;
        let pointer = self.header + 2 * self.cells;
        self.bytes[pointer..pointer + 2].fill(0);
        self.last = 0;
        cell
    }

    fn set_right(&mut self, child: u32) {
        self.bytes[8..12].copy_from_slice(&child.to_be_bytes());
    }

    fn right(&self) -> u32 {
        u32::from_be_bytes([self.bytes[8], self.bytes[9], self.bytes[10], self.bytes[11]])
    }

    /// The page as written: its header completed (no freeblocks, no fragments).
    fn finished(&mut self) -> &[u8] {
        self.bytes[3..5].copy_from_slice(&(self.cells as u16).to_be_bytes());
        // A content start of 65,536 is written as 0; pages here are at most 65,536 bytes.
        self.bytes[5..7].copy_from_slice(&(self.content as u16).to_be_bytes());
        &self.bytes
    }

    fn reset(&mut self, layout: &Layout) {
        self.bytes[1..].fill(0);
        self.cells = 0;
        self.content = layout.usable;
        self.last = 0;
    }
}

/// An interior level: its page being filled, and the entry waiting to go up once the page is
/// full (the page's right child is then set), kept until another child arrives or the tree
/// ends (which then splits the page's last cell off).
struct Level {
    page: Page,
    waiting: Option<Vec<u8>>,
}

/// The tree being written. Rows must come in strictly increasing key order.
pub struct PositionTree {
    layout: Layout,
    out: BufWriter<File>,
    next_page: u32,
    leaf: Page,
    /// The entry after a full leaf, waiting (as [`Level::waiting`]).
    waiting: Option<Vec<u8>>,
    levels: Vec<Level>,
    last_key: Option<(i64, i64, u8)>,
    cell: [u8; CELL_MAX],
}

impl PositionTree {
    /// Opens `path` (made by SQLite, `posiciones` empty) to append the tree's pages.
    pub fn open(path: &Path, layout: Layout) -> io::Result<PositionTree> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)?;
        file.seek(SeekFrom::Start(
            u64::from(layout.pages) * layout.page_size as u64,
        ))?;
        Ok(PositionTree {
            layout,
            out: BufWriter::with_capacity(PAGES_PER_WRITE * layout.page_size, file),
            next_page: layout.pages + 1,
            leaf: Page::new(&layout, LEAF),
            waiting: None,
            levels: Vec::new(),
            last_key: None,
            cell: [0; CELL_MAX],
        })
    }

    /// Adds one row, after every row added before it in key order.
    pub fn add(&mut self, vehicle_id: i64, row: &PositionRow) -> Result<(), TreeError> {
        let key = (vehicle_id, row.ts_utc, row.sequence);
        if self.last_key.is_some_and(|last| key <= last) {
            return Err(TreeError::Order);
        }
        let len = encode_cell(&mut self.cell, vehicle_id, row)?;
        let cell = self.cell;
        self.add_cell(&cell[..len])?;
        self.last_key = Some(key);
        Ok(())
    }

    fn add_cell(&mut self, cell: &[u8]) -> io::Result<()> {
        if let Some(up) = self.waiting.take() {
            let page = self.write_page(Which::Leaf)?;
            self.leaf.reset(&self.layout);
            self.push_up(0, page, up)?;
            self.leaf.push(&[cell]);
        } else if self.leaf.fits(cell.len()) {
            self.leaf.push(&[cell]);
        } else {
            self.waiting = Some(cell.to_vec());
        }
        Ok(())
    }

    /// Adds `child` and the entry after it to interior level `index`.
    fn push_up(&mut self, index: usize, child: u32, entry: Vec<u8>) -> io::Result<()> {
        if index == self.levels.len() {
            self.levels.push(Level {
                page: Page::new(&self.layout, INTERIOR),
                waiting: None,
            });
        }
        let child_bytes = child.to_be_bytes();
        let level = &mut self.levels[index];
        if let Some(up) = level.waiting.take() {
            let page = self.write_page(Which::Level(index))?;
            let level = &mut self.levels[index];
            level.page.reset(&self.layout);
            level.page.push(&[&child_bytes, &entry]);
            self.push_up(index + 1, page, up)?;
        } else if level.page.fits(4 + entry.len()) {
            level.page.push(&[&child_bytes, &entry]);
        } else {
            level.page.set_right(child);
            level.waiting = Some(entry);
        }
        Ok(())
    }

    /// Appends a page to the file; its number.
    fn write_page(&mut self, which: Which) -> io::Result<u32> {
        if self.next_page == self.layout.lock_page {
            self.out.write_all(&vec![0; self.layout.page_size])?;
            self.next_page += 1;
        }
        let page = match which {
            Which::Leaf => &mut self.leaf,
            Which::Level(index) => &mut self.levels[index].page,
        };
        self.out.write_all(page.finished())?;
        let number = self.next_page;
        self.next_page += 1;
        Ok(number)
    }

    /// Writes what is left, the top page into the root and the header's page count; the
    /// file's pages.
    pub fn finish(mut self) -> io::Result<u32> {
        if self.last_key.is_none() {
            // No rows: the root SQLite made stays the empty leaf it is.
            return Ok(self.layout.pages);
        }
        if let Some(up) = self.waiting.take() {
            // A full leaf and one entry after it: the leaf's last entry goes up instead, so
            // that the last leaf is not empty.
            let divider = self.leaf.pop();
            let page = self.write_page(Which::Leaf)?;
            self.leaf.reset(&self.layout);
            self.push_up(0, page, divider)?;
            self.leaf.push(&[&up]);
        }
        let mut child = if self.levels.is_empty() {
            None
        } else {
            Some(self.write_page(Which::Leaf)?)
        };
        let mut index = 0;
        while let Some(below) = child {
            let level = &mut self.levels[index];
            if let Some(up) = level.waiting.take() {
                // As for the leaf: the full page's last cell splits off and goes up, and a
                // new page holds the right child with the entry that waited.
                let last = level.page.pop();
                let right = level.page.right();
                let (split_child, divider) = last.split_at(4);
                let split_child = u32::from_be_bytes([
                    split_child[0],
                    split_child[1],
                    split_child[2],
                    split_child[3],
                ]);
                let divider = divider.to_vec();
                level.page.set_right(split_child);
                let page = self.write_page(Which::Level(index))?;
                let level = &mut self.levels[index];
                level.page.reset(&self.layout);
                level.page.push(&[&right.to_be_bytes(), &up]);
                self.push_up(index + 1, page, divider)?;
            }
            self.levels[index].page.set_right(below);
            child = if index + 1 == self.levels.len() {
                None
            } else {
                Some(self.write_page(Which::Level(index))?)
            };
            index += 1;
        }
        let pages = self.next_page - 1;
        let top = match self.levels.last_mut() {
            Some(level) => level.page.finished().to_vec(),
            None => self.leaf.finished().to_vec(),
        };
        let file = self
            .out
            .into_inner()
            .map_err(io::IntoInnerError::into_error)?;
        let page_size = self.layout.page_size as u64;
        file.write_all_at(&top, u64::from(self.layout.root - 1) * page_size)?;
        set_page_count(&file, pages)?;
        Ok(pages)
    }
}

enum Which {
    Leaf,
    Level(usize),
}

/// Sets the header's page count (offset 28) and marks it valid: the change counter (24) and
/// the "version valid for" number (92) move together to the next value.
fn set_page_count(file: &File, pages: u32) -> io::Result<()> {
    let mut header = [0u8; 100];
    file.read_exact_at(&mut header, 0)?;
    let counter =
        u32::from_be_bytes([header[24], header[25], header[26], header[27]]).wrapping_add(1);
    header[24..28].copy_from_slice(&counter.to_be_bytes());
    header[28..32].copy_from_slice(&pages.to_be_bytes());
    header[92..96].copy_from_slice(&counter.to_be_bytes());
    file.write_all_at(&header, 0)
}

/// The layout of the file at `path`, SQLite's header read directly, with `posiciones`' root.
pub fn layout_of(path: &Path, root: u32) -> io::Result<Layout> {
    let mut header = [0u8; 100];
    File::open(path)?.read_exact(&mut header)?;
    let size = u16::from_be_bytes([header[16], header[17]]);
    // 1 stands for 65,536.
    let page_size = if size == 1 { 65_536 } else { usize::from(size) };
    let pages = u32::from_be_bytes([header[28], header[29], header[30], header[31]]);
    Ok(Layout {
        page_size,
        usable: page_size - usize::from(header[20]),
        pages,
        root,
        lock_page: (LOCK_BYTE / page_size) as u32 + 1,
    })
}

/// SQLite's serial type of an integer and its length, as `sqlite3VdbeSerialType` chooses it
/// (schema format 4: 0 and 1 take no bytes).
fn integer_type(i: i64) -> (u8, usize) {
    let u = if i < 0 { !i as u64 } else { i as u64 };
    if u <= 127 {
        match i {
            0 => (8, 0),
            1 => (9, 0),
            _ => (1, 1),
        }
    } else if u <= 32_767 {
        (2, 2)
    } else if u <= 8_388_607 {
        (3, 3)
    } else if u <= 2_147_483_647 {
        (4, 4)
    } else if u <= 0x7FFF_FFFF_FFFF {
        (5, 6)
    } else {
        (6, 8)
    }
}

/// How SQLite 3.54 stores a float bound to a REAL column of this table (seen byte for byte in
/// `cells_are_the_ones_sqlite_writes`): always as an 8-byte float, whole numbers too, with
/// −0 as +0; a NaN is bound as NULL.
fn real(f: f64) -> Result<f64, TreeError> {
    if f.is_nan() {
        return Err(TreeError::Null);
    }
    Ok(if f == 0.0 { 0.0 } else { f })
}

/// The longest cell: the payload's length (under 128: one byte), the record's header (its
/// length and ten serial types, one byte each), ten values of at most 8 bytes; and 8 bytes
/// beyond, where [`put_integer`] stores a whole word whatever the value's length.
const CELL_MAX: usize = 1 + 11 + 10 * 8 + 8;

/// `row` as a leaf cell of `posiciones`' B-tree into `cell`: the payload's length, then the
/// record (header length, serial types, values, big-endian); the cell's length. Every store
/// is a whole word at a fixed place or one advanced by the value's length: a copy of each
/// value's bytes was a `memcpy` call, ten a row.
fn encode_cell(
    cell: &mut [u8; CELL_MAX],
    vehicle_id: i64,
    row: &PositionRow,
) -> Result<usize, TreeError> {
    let r = &row.row;
    let speed = real(r.speed_kmh)?;
    cell[1] = 11;
    let mut at = 12;
    put_integer(cell, &mut at, 0, vehicle_id);
    put_integer(cell, &mut at, 1, row.ts_utc);
    put_integer(cell, &mut at, 2, i64::from(row.sequence));
    put_integer(cell, &mut at, 3, r.delay_s);
    put_integer(cell, &mut at, 4, r.lat_e6);
    put_integer(cell, &mut at, 5, r.lon_e6);
    cell[2 + 6] = 7;
    cell[at..at + 8].copy_from_slice(&speed.to_bits().to_be_bytes());
    at += 8;
    put_integer(cell, &mut at, 7, r.heading_deg);
    put_integer(cell, &mut at, 8, i64::from(r.ignition));
    put_integer(cell, &mut at, 9, r.odometer_m);
    // The payload: the record, at most 91 bytes, so its length is a one-byte varint.
    cell[0] = (at - 1) as u8;
    Ok(at)
}

/// Value `slot`'s serial type into the header and its bytes at `at`: the word shifted so that
/// its first `len` bytes are the value's last, stored whole (the rest is overwritten by the
/// next value or lies beyond the cell).
#[inline(always)]
fn put_integer(cell: &mut [u8; CELL_MAX], at: &mut usize, slot: usize, i: i64) {
    let (serial, len) = integer_type(i);
    cell[2 + slot] = serial;
    let shifted = i.wrapping_shl(64 - 8 * len as u32);
    cell[*at..*at + 8].copy_from_slice(&shifted.to_be_bytes());
    *at += len;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::encoding::StoredRow;
    use crate::store::schema::DDL;
    use proptest::prelude::*;
    use rusqlite::Connection;

    /// A new file with the schema at `page_size`, closed: its layout for the tree.
    fn new_file(path: &Path, page_size: usize) -> Layout {
        let conn = Connection::open(path).unwrap();
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = OFF; PRAGMA page_size = {page_size}; {DDL}"
        ))
        .unwrap();
        let root: u32 = conn
            .query_row(
                "SELECT rootpage FROM sqlite_schema WHERE name = 'posiciones'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        drop(conn);
        layout_of(path, root).unwrap()
    }

    fn row(ts_utc: i64, sequence: u8, speed_kmh: f64, odometer_m: i64, other: i64) -> PositionRow {
        PositionRow {
            ts_utc,
            sequence,
            row: StoredRow {
                delay_s: other % 7,
                lat_e6: other.wrapping_add(40_000_000),
                lon_e6: other.wrapping_mul(3).wrapping_sub(3_703_790),
                speed_kmh,
                heading_deg: other.rem_euclid(360),
                ignition: other % 2 == 0,
                odometer_m,
            },
        }
    }

    /// `rows` inserted by SQLite itself, as the row-by-row writer bound them.
    fn insert_with_sqlite(conn: &Connection, rows: &[(i64, PositionRow)]) {
        conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
        let mut insert = conn
            .prepare("INSERT INTO posiciones (vehiculo_id, ts_utc, secuencia, retraso_s, lat_e6, lon_e6, velocidad_kmh, rumbo_grados, ignicion, odometro_m) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)")
            .unwrap();
        for (vehicle, r) in rows {
            insert
                .execute(rusqlite::params![
                    vehicle,
                    r.ts_utc,
                    r.sequence,
                    r.row.delay_s,
                    r.row.lat_e6,
                    r.row.lon_e6,
                    r.row.speed_kmh,
                    r.row.heading_deg,
                    r.row.ignition,
                    r.row.odometer_m
                ])
                .unwrap();
        }
    }

    /// Every row as SQLite reads it back, with each value's type and exact bits.
    fn stored(path: &Path) -> Vec<Vec<String>> {
        let conn = Connection::open(path).unwrap();
        let mut statement = conn
            .prepare("SELECT quote(vehiculo_id), quote(ts_utc), quote(secuencia), quote(retraso_s), quote(lat_e6), quote(lon_e6), typeof(velocidad_kmh) || hex(CAST(velocidad_kmh AS BLOB)) || ':' || velocidad_kmh, quote(rumbo_grados), quote(ignicion), quote(odometro_m) FROM posiciones")
            .unwrap();
        statement
            .query_map([], |r| (0..10).map(|i| r.get::<_, String>(i)).collect())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    fn integrity(path: &Path) -> String {
        let conn = Connection::open(path).unwrap();
        conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap()
    }

    /// Builds the tree of `rows` in a new file of `page_size`; the file's pages.
    fn build(path: &Path, page_size: usize, rows: &[(i64, PositionRow)]) -> u32 {
        let layout = new_file(path, page_size);
        let mut tree = PositionTree::open(path, layout).unwrap();
        for (vehicle, r) in rows {
            tree.add(*vehicle, r).unwrap();
        }
        tree.finish().unwrap()
    }

    /// The tree's levels (0 for an empty root), down its leftmost edge.
    fn depth(path: &Path, page_size: usize) -> usize {
        let bytes = std::fs::read(path).unwrap();
        let conn = Connection::open(path).unwrap();
        let mut page = conn
            .query_row(
                "SELECT rootpage FROM sqlite_schema WHERE name = 'posiciones'",
                [],
                |r| r.get::<_, u32>(0),
            )
            .unwrap() as usize;
        let mut levels = 0;
        loop {
            let at = (page - 1) * page_size;
            let p = &bytes[at..at + page_size];
            if u16::from_be_bytes([p[3], p[4]]) == 0 {
                return levels;
            }
            levels += 1;
            if p[0] == LEAF {
                return levels;
            }
            let first = usize::from(u16::from_be_bytes([p[12], p[13]]));
            page =
                u32::from_be_bytes([p[first], p[first + 1], p[first + 2], p[first + 3]]) as usize;
        }
    }

    /// The cells of the leaf page `page` of the file at `path`.
    fn leaf_cells(path: &Path, page_size: usize, page: u32) -> Vec<Vec<u8>> {
        let bytes = std::fs::read(path).unwrap();
        let page = &bytes[(page as usize - 1) * page_size..page as usize * page_size];
        assert_eq!(page[0], LEAF);
        let cells = usize::from(u16::from_be_bytes([page[3], page[4]]));
        (0..cells)
            .map(|i| {
                let at = usize::from(u16::from_be_bytes([page[8 + 2 * i], page[9 + 2 * i]]));
                // Payloads here are under 128 bytes: a one-byte length.
                let len = usize::from(page[at]);
                page[at..at + 1 + len].to_vec()
            })
            .collect()
    }

    /// Values at the edges of every serial type SQLite picks, negatives, the odometer's −1,
    /// whole and fractional speeds (0, −0, beyond the integers, the largest, the smallest).
    fn edge_rows() -> Vec<(i64, PositionRow)> {
        let integers = [
            0,
            1,
            -1,
            2,
            127,
            128,
            -128,
            -129,
            32_767,
            32_768,
            -32_769,
            8_388_607,
            8_388_608,
            -8_388_609,
            2_147_483_647,
            2_147_483_648,
            -2_147_483_649,
            0x7FFF_FFFF_FFFF,
            0x8000_0000_0000,
            -0x8000_0000_0001,
            i64::MAX,
            i64::MIN,
        ];
        let speeds = [
            0.0,
            -0.0,
            1.0,
            12.5,
            -3.5,
            130.0,
            0.1,
            9.2e18,
            1e19,
            -1e19,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        let mut rows = Vec::new();
        for (i, value) in integers.into_iter().enumerate() {
            let speed = speeds[i % speeds.len()];
            let mut r = row(value, 0, speed, value, i as i64);
            r.row.delay_s = value;
            r.row.lat_e6 = value;
            r.row.heading_deg = value.wrapping_add(1).wrapping_neg();
            rows.push((value, r));
        }
        for (i, speed) in speeds.into_iter().enumerate() {
            rows.push((7, row(i as i64, 1, speed, -1, i as i64)));
        }
        rows.sort_by_key(|(v, r)| (*v, r.ts_utc, r.sequence));
        rows
    }

    /// The cells written here are byte for byte those SQLite wrote for the same rows bound
    /// as the row-by-row writer bound them, at every serial type's edges; and the rows read
    /// back the same, value types and bits included.
    #[test]
    fn cells_are_the_ones_sqlite_writes() {
        let dir = tempfile::tempdir().unwrap();
        let rows = edge_rows();
        let theirs = dir.path().join("sqlite.db");
        let layout = new_file(&theirs, 16_384);
        insert_with_sqlite(&Connection::open(&theirs).unwrap(), &rows);
        let ours = dir.path().join("ours.db");
        build(&ours, 16_384, &rows);
        assert_eq!(integrity(&ours), "ok");
        let expected = leaf_cells(&theirs, 16_384, layout.root);
        assert_eq!(expected.len(), rows.len());
        assert_eq!(leaf_cells(&ours, 16_384, layout.root), expected);
        assert_eq!(stored(&ours), stored(&theirs));
    }

    /// A NaN speed (stored by SQLite as NULL, refused by NOT NULL), a repeated key and a key
    /// before the previous one are refused, and refused rows leave the tree as it was.
    #[test]
    fn a_null_a_repeated_key_and_a_key_out_of_order_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let layout = new_file(&path, 512);
        let mut tree = PositionTree::open(&path, layout).unwrap();
        tree.add(2, &row(10, 0, 1.5, 5, 1)).unwrap();
        let refused = [
            (2, row(11, 0, f64::NAN, 5, 1)),
            (2, row(10, 0, 1.5, 5, 1)),
            (2, row(9, 0, 1.5, 5, 1)),
            (1, row(20, 0, 1.5, 5, 1)),
        ];
        assert!(matches!(
            tree.add(refused[0].0, &refused[0].1),
            Err(TreeError::Null)
        ));
        for (vehicle, r) in &refused[1..] {
            assert!(matches!(tree.add(*vehicle, r), Err(TreeError::Order)));
        }
        tree.add(2, &row(10, 1, 2.5, 6, 2)).unwrap();
        tree.finish().unwrap();
        assert_eq!(integrity(&path), "ok");
        assert_eq!(stored(&path).len(), 2);
    }

    fn rows_of(count: usize, seed: i64) -> Vec<(i64, PositionRow)> {
        (0..count as i64)
            .map(|i| {
                let vehicle = 1 + i / 97;
                let other = (i * 7919 + seed).rem_euclid(1_000_003) - 500_000;
                let speed = if i % 3 == 0 {
                    0.0
                } else {
                    (other % 1300) as f64 / 10.0
                };
                (
                    vehicle,
                    row(
                        1_700_000_000 + i * 15,
                        (i % 2) as u8,
                        speed,
                        other * 1000,
                        other,
                    ),
                )
            })
            .collect()
    }

    /// The page of SQLite's lock byte (at 1 GiB; moved here to a page the tree reaches) is
    /// skipped: zeros, and no interior cell or right pointer leads to it.
    #[test]
    fn the_lock_byte_page_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let mut layout = new_file(&path, 512);
        layout.lock_page = layout.pages + 20;
        let mut tree = PositionTree::open(&path, layout).unwrap();
        for (vehicle, r) in rows_of(3_000, 1) {
            tree.add(vehicle, &r).unwrap();
        }
        let pages = tree.finish().unwrap();
        assert!(pages > layout.lock_page + 100);
        let bytes = std::fs::read(&path).unwrap();
        let page = |n: u32| &bytes[(n as usize - 1) * 512..n as usize * 512];
        assert!(page(layout.lock_page).iter().all(|b| *b == 0));
        let mut children = Vec::new();
        for n in (layout.pages + 1..=pages).chain([layout.root]) {
            let p = page(n);
            if p[0] != INTERIOR {
                continue;
            }
            children.push(u32::from_be_bytes([p[8], p[9], p[10], p[11]]));
            for i in 0..usize::from(u16::from_be_bytes([p[3], p[4]])) {
                let at = usize::from(u16::from_be_bytes([p[12 + 2 * i], p[13 + 2 * i]]));
                children.push(u32::from_be_bytes([p[at], p[at + 1], p[at + 2], p[at + 3]]));
            }
        }
        // Every page after SQLite's but the lock page is the child of exactly one cell.
        children.sort_unstable();
        let expected: Vec<u32> = (layout.pages + 1..=pages)
            .filter(|n| *n != layout.lock_page)
            .collect();
        assert_eq!(children, expected);
    }

    /// Row counts from none through several leaves, interior pages and a third and fourth
    /// level (at 512-byte pages: about 15 rows a leaf): a sound file holding exactly the rows
    /// SQLite stores for them. The counts where the tree grows a level (a full leaf, a full
    /// level) and those either side are found by building, and all are here.
    #[test]
    fn trees_of_every_size_are_sound_and_hold_their_rows() {
        let dir = tempfile::tempdir().unwrap();
        let scratch = dir.path().join("scan.db");
        let mut counts: Vec<usize> = (0..=40).collect();
        let depth_of = |count: usize| {
            build(&scratch, 512, &rows_of(count, 1));
            let levels = depth(&scratch, 512);
            std::fs::remove_file(&scratch).unwrap();
            levels
        };
        // The depth only grows with the count: the first count of each depth by bisection.
        for levels in 2..=4 {
            let (mut low, mut high) = (1, 20_000);
            while low < high {
                let middle = (low + high) / 2;
                if depth_of(middle) >= levels {
                    high = middle;
                } else {
                    low = middle + 1;
                }
            }
            assert!(high < 20_000, "a tree of {levels} levels");
            counts.extend([high - 2, high - 1, high, high + 1]);
        }
        counts.sort_unstable();
        counts.dedup();
        let mut levels_seen = std::collections::BTreeSet::new();
        for count in counts {
            let rows = rows_of(count, 1);
            let ours = dir.path().join(format!("o{count}.db"));
            let pages = build(&ours, 512, &rows);
            assert_eq!(integrity(&ours), "ok", "{count} rows");
            levels_seen.insert(depth(&ours, 512));
            let theirs = dir.path().join(format!("s{count}.db"));
            new_file(&theirs, 512);
            insert_with_sqlite(&Connection::open(&theirs).unwrap(), &rows);
            assert_eq!(stored(&ours), stored(&theirs), "{count} rows");
            assert_eq!(
                std::fs::metadata(&ours).unwrap().len(),
                u64::from(pages) * 512
            );
            std::fs::remove_file(ours).unwrap();
            std::fs::remove_file(theirs).unwrap();
        }
        assert_eq!(levels_seen.into_iter().collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]
        /// Any values (negatives, extremes, whole and fractional speeds), any count up to four
        /// levels at 512-byte pages: a sound file with SQLite's own rows.
        #[test]
        fn any_rows_make_a_sound_tree(
            count in 0usize..3_000,
            values in proptest::collection::vec((any::<i64>(), any::<i64>(), any::<f64>(), 0u8..3), 1..40),
            page in prop_oneof![Just(512usize), Just(1024), Just(4096)],
        ) {
            let dir = tempfile::tempdir().unwrap();
            let rows: Vec<(i64, PositionRow)> = (0..count)
                .map(|i| {
                    let (a, b, speed, step) = values[i % values.len()];
                    let speed = if speed.is_nan() { 0.0 } else { speed };
                    let mut r = row(i as i64 * 3 + i64::from(step), step % 2, speed, b, a);
                    r.row.lat_e6 = a;
                    r.row.delay_s = b;
                    (a.rem_euclid(3) + (i as i64) / 50 * 3, r)
                })
                .collect::<Vec<_>>();
            let mut rows = rows;
            rows.sort_by_key(|(v, r)| (*v, r.ts_utc, r.sequence));
            rows.dedup_by_key(|(v, r)| (*v, r.ts_utc, r.sequence));
            let ours = dir.path().join("o.db");
            build(&ours, page, &rows);
            prop_assert_eq!(integrity(&ours), "ok");
            let theirs = dir.path().join("s.db");
            new_file(&theirs, page);
            insert_with_sqlite(&Connection::open(&theirs).unwrap(), &rows);
            prop_assert_eq!(stored(&ours), stored(&theirs));
        }
    }
}
