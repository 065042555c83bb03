//! Report thumbnails: a rendered page's screenshot, small enough to embed (`similar -o
//! report.html`, the command line's HTML report).

/// The longest side of a thumbnail, in pixels (the quarter-scale screenshot, halved again).
pub const THUMB_WIDTH: u32 = 160;

/// A report thumbnail from a screenshot (PNG): scaled to [`THUMB_WIDTH`] wide and re-encoded as
/// a JPEG (quality 55: about 3–5 KB, so 500 pages stay far under 5 MB), as a `data:` URI.
pub fn thumbnail(png: &[u8]) -> anyhow::Result<String> {
    use anyhow::Context as _;
    let img = image::load_from_memory(png).context("decoding the screenshot")?;
    let small = img.resize(
        THUMB_WIDTH,
        THUMB_WIDTH,
        image::imageops::FilterType::Triangle,
    );
    let mut jpeg = Vec::new();
    let enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 55);
    small
        .to_rgb8()
        .write_with_encoder(enc)
        .context("encoding the thumbnail")?;
    Ok(format!("data:image/jpeg;base64,{}", base64(&jpeg)))
}

/// Standard base64 with padding.
pub fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        out.push(T[(n >> 18) as usize & 63] as char);
        out.push(T[(n >> 12) as usize & 63] as char);
        out.push(if c.len() > 1 {
            T[(n >> 6) as usize & 63] as char
        } else {
            '='
        });
        out.push(if c.len() > 2 {
            T[n as usize & 63] as char
        } else {
            '='
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_vectors() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(i.as_bytes()), o);
        }
    }
}
