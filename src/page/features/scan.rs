//! The steps of [`super::check_bounds`]'s linear pre-scan: one per kind of tag.

use super::{closes_itself, is_raw_text, is_void, HtmlRefused, MAX_ATTRIBUTES, MAX_DEPTH};

/// Skip a comment, doctype, CDATA or processing instruction starting at `i` (just after its
/// `<`); returns where the scan goes on.
pub(super) fn skip_declaration(b: &[u8], i: usize) -> usize {
    // Comment, doctype, CDATA, processing instruction.
    let end = if b[i..].starts_with(b"!--") {
        memchr::memmem::find(&b[i + 3..], b"-->").map(|e| i + 3 + e + 3)
    } else {
        memchr::memchr(b'>', &b[i..]).map(|e| i + e + 1)
    };
    end.unwrap_or(b.len())
}

/// An end tag at `i` (its `/`): close up to the nearest open element of its name; returns where
/// the scan goes on.
pub(super) fn end_tag(b: &[u8], i: usize, open: &mut Vec<&[u8]>) -> usize {
    let start = i + 1;
    let mut e = start;
    while e < b.len() && b[e].is_ascii_alphanumeric() {
        e += 1;
    }
    let name = b[start..e].to_ascii_lowercase();
    // Close up to the nearest open element of that name, if there is one.
    if let Some(k) = open.iter().rposition(|n| n.eq_ignore_ascii_case(&name)) {
        open.truncate(k);
    }
    memchr::memchr(b'>', &b[e..]).map_or(b.len(), |x| e + x + 1)
}

/// A start tag at `i` (its name; its `<` at `at`): count its attributes, skip a raw-text
/// element's content, open the element as a browser would; returns where the scan goes on.
pub(super) fn start_tag<'a>(
    b: &'a [u8],
    i: usize,
    at: usize,
    open: &mut Vec<&'a [u8]>,
) -> Result<usize, HtmlRefused> {
    let start = i;
    let mut e = start;
    while e < b.len() && !matches!(b[e], b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'/' | b'>') {
        e += 1;
    }
    let name = &b[start..e];
    let (k, self_closed) = attributes(b, e, at)?;
    let i = (k + 1).min(b.len());
    let lname = name.to_ascii_lowercase();
    if is_raw_text(&lname) {
        return Ok(skip_raw_text(b, i, &lname));
    }
    if is_void(&lname) || self_closed {
        return Ok(i);
    }
    if closes_itself(&lname) {
        // The same element open among the last few (inline ones between) closes.
        let from = open.len().saturating_sub(4);
        if let Some(k) = open[from..]
            .iter()
            .rposition(|n| n.eq_ignore_ascii_case(&lname))
        {
            open.truncate(from + k);
        }
    }
    open.push(name);
    if open.len() > MAX_DEPTH {
        return Err(HtmlRefused::TooDeep(at));
    }
    Ok(i)
}

/// The attributes of the tag whose name ends at `e`, up to the tag's end (quotes respected):
/// where the tag ends (its `>`, or the end of input) and whether it is self-closed.
fn attributes(b: &[u8], e: usize, at: usize) -> Result<(usize, bool), HtmlRefused> {
    let (mut attrs, mut k, mut quote, mut in_name, mut self_closed) =
        (0usize, e, 0u8, false, false);
    while k < b.len() {
        let c = b[k];
        if quote != 0 {
            if c == quote {
                quote = 0;
            }
        } else if c == b'>' {
            break;
        } else if c == b'"' || c == b'\'' {
            quote = c;
        } else if c.is_ascii_whitespace() || c == b'/' {
            self_closed = c == b'/';
            in_name = false;
        } else if c == b'=' {
            in_name = true; // the value that follows is not a new attribute
        } else {
            self_closed = false;
            if !in_name {
                attrs += 1;
                if attrs > MAX_ATTRIBUTES {
                    return Err(HtmlRefused::TooManyAttributes(at));
                }
                in_name = true;
            }
        }
        k += 1;
    }
    Ok((k, self_closed))
}

/// Skip a raw-text element's content from `i` to its `</name` (case-insensitively); returns
/// where the scan goes on (just after the `</`, or the end of input).
fn skip_raw_text(b: &[u8], i: usize, lname: &[u8]) -> usize {
    // Skip to `</name` (case-insensitively).
    let mut j = i;
    loop {
        match memchr::memmem::find(&b[j..], b"</") {
            Some(x) => {
                let t = j + x + 2;
                if b.len() >= t + lname.len() && b[t..t + lname.len()].eq_ignore_ascii_case(lname) {
                    return t;
                }
                j = t;
            }
            None => return b.len(),
        }
    }
}
