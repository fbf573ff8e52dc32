//! PNG in and out: encoding the map within its byte budget, decoding tiles defensively.
//!
//! Owns the byte formats only. A map over photo-like tiles can exceed the budget as RGB; it
//! is then stored as at most 256 colours (`palette`), as OSM's own tiles already are: the
//! colours that carry the picture stay exact, anti-aliased edges move to the nearest kept. Tiles come from the network and may be anything: decoding is
//! bounded in memory and any surprise is an error, never a panic.

use std::io::Cursor;

use super::MapError;
use super::buffer::Buffer;
use super::palette;

/// Largest PNG a map may be: the whole tool result must stay far below the 1 MB clients
/// accept, and base64 adds a third.
pub const PNG_BUDGET_BYTES: usize = 300 * 1024;

/// Encodes `rgb` (`width × height × 3`) as PNG no larger than [`PNG_BUDGET_BYTES`] when
/// possible: truecolour first (exact), and if that is too big, as at most 256 colours
/// ([`palette::index`]: exact when the picture has no more, else its colours that carry it).
pub fn encode(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>, MapError> {
    let truecolour = encode_with(rgb, width, height, Layout::Truecolour)?;
    if truecolour.len() <= PNG_BUDGET_BYTES {
        return Ok(truecolour);
    }
    // A mapping of its own, like the canvas: returned to the system when done.
    let mut indexes = Buffer::zeroed(rgb.len() / 3);
    let (palette, _) = palette::index(rgb, &mut indexes);
    let indexed = encode_with(&indexes, width, height, Layout::Indexed(&palette))?;
    Ok(if indexed.len() < truecolour.len() {
        indexed
    } else {
        truecolour
    })
}

/// How the pixels are laid out and compressed.
enum Layout<'a> {
    /// RGB, fdeflate's fast mode, the filter chosen per row: 1–2.5 ms for a map.
    Truecolour,
    /// One byte a pixel into this palette, unfiltered (an index is no magnitude a filter
    /// could predict; the PNG spec's advice) and compressed by zlib's first level, which
    /// takes a busy fleet map (1,000 units) from 358–405 KB with fdeflate to 283 KB, within
    /// the budget, for ~8 ms more.
    Indexed(&'a [u8]),
}

fn encode_with(
    data: &[u8],
    width: u32,
    height: u32,
    layout: Layout<'_>,
) -> Result<Vec<u8>, MapError> {
    let mut out = Vec::with_capacity(data.len() / 4);
    {
        let mut encoder = png::Encoder::new(&mut out, width, height);
        encoder.set_depth(png::BitDepth::Eight);
        match layout {
            Layout::Truecolour => {
                encoder.set_color(png::ColorType::Rgb);
                encoder.set_compression(png::Compression::Fast);
                encoder.set_filter(png::Filter::Adaptive);
            }
            Layout::Indexed(palette) => {
                encoder.set_color(png::ColorType::Indexed);
                encoder.set_palette(palette.to_vec());
                encoder.set_deflate_compression(png::DeflateCompression::Level(1));
                encoder.set_filter(png::Filter::NoFilter);
            }
        }
        let mut writer = encoder
            .write_header()
            .map_err(|e| MapError::Encode(e.to_string()))?;
        match layout {
            Layout::Truecolour => writer.write_image_data(data),
            Layout::Indexed(_) => {
                let stream = unfiltered_zlib(data, width as usize)?;
                writer.write_chunk(png::chunk::IDAT, &stream)
            }
        }
        .map_err(|e| MapError::Encode(e.to_string()))?;
        writer
            .finish()
            .map_err(|e| MapError::Encode(e.to_string()))?;
    }
    // The answer keeps these bytes: give back the unused reserve now (a large block freed
    // later raises glibc's mmap threshold to its size, and with it what each worker's
    // arena keeps).
    out.shrink_to_fit();
    Ok(out)
}

/// The zlib stream of `data`'s rows, each behind the "no filter" byte, at zlib's first level:
/// what png's `write_image_data` makes of them, in one piece. png feeds zlib row by row,
/// and flate2 zero-fills its 32 KiB output buffer on every call: 1,200 calls, 40 M
/// instructions of `memset` for a fleet map (7 % of the whole call).
fn unfiltered_zlib(data: &[u8], row_len: usize) -> Result<Vec<u8>, MapError> {
    use std::io::Write;
    let rows = data.len() / row_len.max(1);
    // A mapping of its own, like the canvas: returned to the system when done.
    let mut lines = Buffer::zeroed(data.len() + rows);
    for (line, row) in lines
        .chunks_exact_mut(row_len + 1)
        .zip(data.chunks_exact(row_len))
    {
        // line[0] stays 0: no filter.
        line[1..].copy_from_slice(row);
    }
    let mut zlib = flate2::write::ZlibEncoder::new(
        Vec::with_capacity(data.len() / 2),
        flate2::Compression::new(1),
    );
    zlib.write_all(&lines)
        .and_then(|()| zlib.finish())
        .map_err(|e| MapError::Encode(e.to_string()))
}

/// A decoding error in Spanish (the png crate's own text is English).
fn png_problem(e: &png::DecodingError) -> String {
    match e {
        png::DecodingError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            "PNG incompleto".into()
        }
        png::DecodingError::LimitsExceeded => "PNG demasiado grande".into(),
        png::DecodingError::Format(_) => "PNG ilegible: no es un PNG válido".into(),
        _ => "PNG ilegible".into(),
    }
}

/// Decodes a PNG tile of exactly `side × side` pixels to RGB (alpha composited on white,
/// palettes and grey expanded). Anything else is an error: a server sending garbage, HTML
/// or a tile of another size must not end up in the picture.
pub fn decode_tile(bytes: &[u8], side: u32) -> Result<Vec<u8>, String> {
    let mut decoder = png::Decoder::new_with_limits(
        Cursor::new(bytes),
        png::Limits {
            bytes: 4 * 1024 * 1024,
        },
    );
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().map_err(|e| png_problem(&e))?;
    let (width, height) = (reader.info().width, reader.info().height);
    if (width, height) != (side, side) {
        return Err(format!(
            "tesela de {width}×{height} px; se esperaba {side}×{side}"
        ));
    }
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| "PNG demasiado grande".to_owned())?;
    let mut buffer = vec![0u8; size];
    let info = reader
        .next_frame(&mut buffer)
        .map_err(|e| png_problem(&e))?;
    let pixels = (side * side) as usize;
    let data = &buffer[..info.buffer_size()];
    let blend =
        |v: u8, a: u8| ((u16::from(v) * u16::from(a) + 255 * (255 - u16::from(a))) / 255) as u8;
    let rgb: Vec<u8> = match info.color_type {
        png::ColorType::Rgb => data.to_vec(),
        png::ColorType::Rgba => data
            .chunks_exact(4)
            .flat_map(|p| [blend(p[0], p[3]), blend(p[1], p[3]), blend(p[2], p[3])])
            .collect(),
        png::ColorType::Grayscale => data.iter().flat_map(|g| [*g, *g, *g]).collect(),
        png::ColorType::GrayscaleAlpha => data
            .chunks_exact(2)
            .flat_map(|p| {
                let g = blend(p[0], p[1]);
                [g, g, g]
            })
            .collect(),
        png::ColorType::Indexed => return Err("PNG con paleta sin expandir".into()),
    };
    if rgb.len() != pixels * 3 {
        return Err("PNG con datos incompletos".into());
    }
    Ok(rgb)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gradient(width: u32, height: u32) -> Vec<u8> {
        (0..width * height)
            .flat_map(|i| {
                let (x, y) = (i % width, i / width);
                [(x % 256) as u8, (y % 256) as u8, ((x * y) % 251) as u8]
            })
            .collect()
    }

    #[test]
    fn a_tile_round_trips_through_png() {
        let rgb = gradient(256, 256);
        let bytes = encode_with(&rgb, 256, 256, Layout::Truecolour).unwrap();
        assert_eq!(decode_tile(&bytes, 256).unwrap(), rgb);
    }

    #[test]
    fn garbage_and_wrong_sizes_are_errors() {
        assert!(decode_tile(b"<html>rate limited</html>", 256).is_err());
        assert!(decode_tile(&[], 256).is_err());
        let small = encode_with(&gradient(64, 64), 64, 64, Layout::Truecolour).unwrap();
        assert!(decode_tile(&small, 256).unwrap_err().contains("64×64"));
        // A truncated PNG.
        let bytes = encode_with(&gradient(256, 256), 256, 256, Layout::Truecolour).unwrap();
        assert!(decode_tile(&bytes[..bytes.len() / 2], 256).is_err());
    }

    /// The PNG's own colour type and the picture it decodes to, expanded to RGB.
    fn decoded(bytes: &[u8]) -> (png::ColorType, Vec<u8>) {
        let mut decoder = png::Decoder::new(Cursor::new(bytes));
        decoder.set_transformations(png::Transformations::IDENTITY);
        let stored = decoder.read_info().unwrap().info().color_type;
        let mut decoder = png::Decoder::new(Cursor::new(bytes));
        decoder.set_transformations(png::Transformations::EXPAND);
        let mut reader = decoder.read_info().unwrap();
        let mut buffer = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buffer).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgb);
        buffer.truncate(info.buffer_size());
        (stored, buffer)
    }

    /// 800 × 600, each row its own colour: 600 colours, tiny as PNG.
    fn rows() -> Vec<u8> {
        (0..600u32)
            .flat_map(|y| [(y % 256) as u8, (y / 3) as u8, 7].repeat(800))
            .collect()
    }

    /// The palette picture's stream, compressed in one piece, is byte for byte what png's
    /// own row-by-row encoder makes of the same indexes (several row lengths, a run of a
    /// thousand pixels and noise).
    #[test]
    fn the_palette_stream_is_the_one_png_itself_writes() {
        let mut state = 99u32;
        for (width, height) in [(800usize, 600usize), (1, 5), (37, 41)] {
            let indexes: Vec<u8> = (0..width * height)
                .map(|i| {
                    state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    if i % 7 == 0 || i < 1000 {
                        3
                    } else {
                        (state >> 24) as u8
                    }
                })
                .collect();
            let palette: Vec<u8> = (0..=255u8).flat_map(|i| [i, 255 - i, i / 2]).collect();
            let ours = encode_with(
                &indexes,
                width as u32,
                height as u32,
                Layout::Indexed(&palette),
            )
            .unwrap();
            let mut theirs = Vec::new();
            {
                let mut encoder = png::Encoder::new(&mut theirs, width as u32, height as u32);
                encoder.set_depth(png::BitDepth::Eight);
                encoder.set_color(png::ColorType::Indexed);
                encoder.set_palette(palette.clone());
                encoder.set_deflate_compression(png::DeflateCompression::Level(1));
                encoder.set_filter(png::Filter::NoFilter);
                let mut writer = encoder.write_header().unwrap();
                writer.write_image_data(&indexes).unwrap();
                writer.finish().unwrap();
            }
            assert!(ours == theirs, "{width} × {height}: the bytes differ");
        }
    }

    #[test]
    fn a_picture_within_the_budget_stays_truecolour_and_exact() {
        for (rgb, width, height) in [(rows(), 800, 600), (gradient(256, 256), 256, 256)] {
            let (stored, back) = decoded(&encode(&rgb, width, height).unwrap());
            assert_eq!(stored, png::ColorType::Rgb);
            assert!(back == rgb, "the picture changed");
        }
    }

    #[test]
    fn an_oversized_picture_keeps_the_colours_that_carry_it_exactly() {
        // Noise above (too big as truecolour), land below with a small red swatch: the land
        // and the swatch must come back exactly, the noise as near as 256 colours allow.
        const LAND: [u8; 3] = [242, 239, 233];
        const RED: [u8; 3] = [215, 25, 28];
        let (width, height) = (800usize, 600usize);
        let mut state = 777u32;
        let rgb: Vec<u8> = (0..width * height)
            .flat_map(|i| {
                let (x, y) = (i % width, i / width);
                if y < height / 2 {
                    state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    let v = state >> 8;
                    [v as u8, (v >> 8) as u8, (v >> 16) as u8]
                } else if (400..410).contains(&x) && (500..510).contains(&y) {
                    RED
                } else {
                    LAND
                }
            })
            .collect();
        let bytes = encode(&rgb, width as u32, height as u32).unwrap();
        let (stored, back) = decoded(&bytes);
        assert_eq!(stored, png::ColorType::Indexed);
        assert!(bytes.len() <= PNG_BUDGET_BYTES, "{}", bytes.len());
        let pixels = rgb.chunks_exact(3).zip(back.chunks_exact(3));
        let mut worst = 0;
        for (i, (was, now)) in pixels.enumerate() {
            if i >= width * height / 2 {
                assert_eq!(was, now, "pixel {i} of the land or the swatch changed");
            } else {
                let d = (0..3)
                    .map(|c| (i32::from(was[c]) - i32::from(now[c])).abs())
                    .max();
                worst = worst.max(d.unwrap_or(0));
            }
        }
        // 256 colours over a 32-level grid of noise: each channel within a few grid steps.
        assert!(worst < 128, "noise moved by {worst}");
    }

    #[test]
    fn noisy_pictures_are_quantised_into_the_budget() {
        // Pseudo-random pixels: incompressible as truecolour (~1.4 MB).
        let mut state = 12345u32;
        let rgb: Vec<u8> = (0..800 * 600 * 3)
            .map(|_| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (state >> 16) as u8
            })
            .collect();
        let bytes = encode(&rgb, 800, 600).unwrap();
        let mut decoder = png::Decoder::new(Cursor::new(&bytes[..]));
        decoder.set_transformations(png::Transformations::IDENTITY);
        let reader = decoder.read_info().unwrap();
        assert_eq!(reader.info().color_type, png::ColorType::Indexed);
        assert!(bytes.len() < 800 * 600 + 4096, "{}", bytes.len());
    }
}
