//! The pixel buffers of one map, mapped straight from the operating system.
//!
//! Owns where a map's big buffers live, nothing else. The supersampled canvas (5.8 MB) and
//! the output picture (1.4 MB) live only while a map is drawn, on whichever worker thread
//! draws it. Taken from the allocator, freeing them kept the memory in the process: glibc
//! raises its mmap threshold after the first such free, so later maps came from each
//! worker's own arena, which keeps its freed top (38.8 MiB after 30 maps). An anonymous
//! mapping is returned to the system when the buffer is dropped. If the system refuses a
//! mapping, the allocator's memory serves instead.

use std::ops::{Deref, DerefMut};

/// Zeroed bytes, returned to the system when dropped.
pub enum Buffer {
    /// A mapping (perhaps rounded up to whole huge pages) and the bytes of it in use.
    Mapped(memmap2::MmapMut, usize),
    Heap(Vec<u8>),
}

/// A transparent huge page on x86-64 and most 64-bit Linux systems.
const HUGE_PAGE_BYTES: usize = 2 << 20;

impl Buffer {
    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> Buffer {
        // The canvas is written whole (the land colour first), so every one of its 1,400
        // small pages faulted in one by one, a trap each, on every map. Rounded up to whole
        // huge pages (the system then places the mapping on their boundaries) and marked
        // for them, it faults in three. The picture (1.4 MB, also written whole) gains the
        // same from one huge page for 0.6 MB of zeroes more. Where the system keeps huge
        // pages off, or refuses the advice, nothing changes but the rounding.
        let mapped = if len >= HUGE_PAGE_BYTES / 2 {
            let whole = len.div_ceil(HUGE_PAGE_BYTES) * HUGE_PAGE_BYTES;
            memmap2::MmapMut::map_anon(whole).inspect(|map| {
                #[cfg(target_os = "linux")]
                let _ = map.advise(memmap2::Advice::HugePage);
            })
        } else {
            memmap2::MmapMut::map_anon(len)
        };
        match mapped {
            Ok(map) if len > 0 => Buffer::Mapped(map, len),
            _ => Buffer::Heap(vec![0u8; len]),
        }
    }

    /// Whether the bytes are a mapping of their own (not the allocator's).
    pub fn is_mapped(&self) -> bool {
        matches!(self, Buffer::Mapped(..))
    }
}

impl Deref for Buffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Buffer::Mapped(map, len) => &map[..*len],
            Buffer::Heap(bytes) => bytes,
        }
    }
}

impl DerefMut for Buffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            Buffer::Mapped(map, len) => &mut map[..*len],
            Buffer::Heap(bytes) => bytes,
        }
    }
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Buffer({} bytes, mapped: {})",
            self.len(),
            self.is_mapped()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_is_zeroed_writable_and_mapped() {
        let mut buffer = Buffer::zeroed(1 << 20);
        assert!(buffer.is_mapped());
        assert_eq!(buffer.len(), 1 << 20);
        assert!(buffer.iter().all(|b| *b == 0));
        buffer[12345] = 7;
        assert_eq!(buffer[12345], 7);
        assert_eq!(Buffer::zeroed(0).len(), 0);
    }

    /// A buffer rounded up to whole huge pages still shows only the bytes asked for, all
    /// zero and writable to the last.
    #[test]
    fn a_huge_page_buffer_is_exactly_as_long_as_asked() {
        for len in [HUGE_PAGE_BYTES / 2, HUGE_PAGE_BYTES + 12_345] {
            let mut buffer = Buffer::zeroed(len);
            assert!(buffer.is_mapped());
            assert_eq!(buffer.len(), len);
            assert!(buffer.iter().all(|b| *b == 0));
            buffer[len - 1] = 9;
            assert_eq!(buffer[len - 1], 9);
        }
    }
}
