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
    Mapped(memmap2::MmapMut),
    Heap(Vec<u8>),
}

impl Buffer {
    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> Buffer {
        match memmap2::MmapMut::map_anon(len) {
            Ok(map) if len > 0 => Buffer::Mapped(map),
            _ => Buffer::Heap(vec![0u8; len]),
        }
    }

    /// Whether the bytes are a mapping of their own (not the allocator's).
    pub fn is_mapped(&self) -> bool {
        matches!(self, Buffer::Mapped(_))
    }
}

impl Deref for Buffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Buffer::Mapped(map) => map,
            Buffer::Heap(bytes) => bytes,
        }
    }
}

impl DerefMut for Buffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            Buffer::Mapped(map) => map,
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
}
