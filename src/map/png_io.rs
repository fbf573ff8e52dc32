//! PNG in and out: encoding the map within its byte budget, decoding tiles defensively.
//!
//! Owns the byte formats only. A map over photo-like tiles can exceed the budget as RGB; it
//! is then quantised to a 256-colour palette (NeuQuant), which OSM's own tiles already are,
//! so the loss is invisible. Tiles come from the network and may be anything: decoding is
//! bounded in memory and any surprise is an error, never a panic.

use std::io::Cursor;

use super::MapError;

/// Largest PNG a map may be: the whole tool result must stay far below the 1 MB clients
/// accept, and base64 adds a third.
pub const PNG_BUDGET_BYTES: usize = 300 * 1024;

/// Encodes `rgb` (`width × height × 3`) as PNG no larger than [`PNG_BUDGET_BYTES`] when
/// possible: truecolour first, an indexed palette if that is too big.
pub fn encode(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>, MapError> {
    let truecolour = encode_with(rgb, width, height, png::ColorType::Rgb, None)?;
    if truecolour.len() <= PNG_BUDGET_BYTES {
        return Ok(truecolour);
    }
    let (palette, indexes) = quantise(rgb);
    let indexed = encode_with(
        &indexes,
        width,
        height,
        png::ColorType::Indexed,
        Some(&palette),
    )?;
    Ok(if indexed.len() < truecolour.len() {
        indexed
    } else {
        truecolour
    })
}

fn encode_with(
    data: &[u8],
    width: u32,
    height: u32,
    colour: png::ColorType,
    palette: Option<&[u8]>,
) -> Result<Vec<u8>, MapError> {
    let mut out = Vec::with_capacity(data.len() / 4);
    {
        let mut encoder = png::Encoder::new(&mut out, width, height);
        encoder.set_color(colour);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::Fast);
        encoder.set_filter(png::Filter::Adaptive);
        if let Some(palette) = palette {
            encoder.set_palette(palette.to_vec());
        }
        let mut writer = encoder
            .write_header()
            .map_err(|e| MapError::Encode(e.to_string()))?;
        writer
            .write_image_data(data)
            .map_err(|e| MapError::Encode(e.to_string()))?;
        writer
            .finish()
            .map_err(|e| MapError::Encode(e.to_string()))?;
    }
    Ok(out)
}

/// A 256-colour palette for `rgb` and each pixel's index into it.
fn quantise(rgb: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let rgba: Vec<u8> = rgb
        .chunks_exact(3)
        .flat_map(|p| [p[0], p[1], p[2], 255])
        .collect();
    // Sample factor 10: NeuQuant's speed/quality middle ground.
    let quantiser = color_quant::NeuQuant::new(10, 256, &rgba);
    let indexes = rgba
        .chunks_exact(4)
        .map(|p| quantiser.index_of(p) as u8)
        .collect();
    (quantiser.color_map_rgb(), indexes)
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
        let bytes = encode_with(&rgb, 256, 256, png::ColorType::Rgb, None).unwrap();
        assert_eq!(decode_tile(&bytes, 256).unwrap(), rgb);
    }

    #[test]
    fn garbage_and_wrong_sizes_are_errors() {
        assert!(decode_tile(b"<html>rate limited</html>", 256).is_err());
        assert!(decode_tile(&[], 256).is_err());
        let small = encode_with(&gradient(64, 64), 64, 64, png::ColorType::Rgb, None).unwrap();
        assert!(decode_tile(&small, 256).unwrap_err().contains("64×64"));
        // A truncated PNG.
        let bytes = encode_with(&gradient(256, 256), 256, 256, png::ColorType::Rgb, None).unwrap();
        assert!(decode_tile(&bytes[..bytes.len() / 2], 256).is_err());
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
