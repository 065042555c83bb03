//! Byte classes and the one-pass scan of a candidate ([`Scan`]): the counts every
//! threshold rule reads (escapes, code bytes, whitespace runs), computed once.

// ---- byte classes -------------------------------------------------------------------------------

pub(super) const fn is_ident_start(b: u8) -> bool {
    IDENT[b as usize] & 2 != 0
}
pub(super) const fn is_ident(b: u8) -> bool {
    IDENT[b as usize] != 0
}
/// 1: an identifier byte (`[A-Za-z0-9_$]`), 2 as well: one that may start an identifier.
static IDENT: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = if b.is_ascii_alphabetic() || b == b'_' || b == b'$' {
            3
        } else if b.is_ascii_digit() {
            1
        } else {
            0
        };
        i += 1;
    }
    t
};
pub(super) const fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Bytes after which a JS receiver (`window.`) or call is code, not a path: JS punctuation.
pub(super) const fn is_js_punct(b: u8) -> bool {
    matches!(
        b,
        b'(' | b')'
            | b'{'
            | b'}'
            | b';'
            | b','
            | b'='
            | b'!'
            | b'&'
            | b'|'
            | b'+'
            | b' '
            | b'?'
            | b':'
            | b'['
    )
}

/// Leading bytes that no URL reference starts with but JavaScript fragments cut out between
/// quotes do (`),t.focus(`, `,r=this`, `!==t.type`, `+o.substring(`).
pub(super) const fn is_js_leading(b: u8) -> bool {
    matches!(
        b,
        b')' | b','
            | b';'
            | b'}'
            | b']'
            | b'!'
            | b'+'
            | b'='
            | b'|'
            | b'&'
            | b'*'
            | b'^'
            | b'('
            | b'{'
            | b':'
            | b'\''
            | b'"'
            | b'`'
            | b'>'
            | b'\\'
            | b'$'
    )
}

/// Facts gathered by the single scan over the candidate.
#[derive(Default)]
pub(super) struct Scan {
    /// A letter, digit or non-ASCII character, counting `%XX` escapes by what they decode to.
    pub(super) has_alnum: bool,
    pub(super) has_control: bool,
    pub(super) has_space: bool,
    /// Bytes of needless escapes (ASCII other than delimiters; invalid UTF-8 sequences).
    pub(super) suspicious_escape_bytes: usize,
    /// `%` not followed by two hex digits.
    pub(super) bad_escapes: usize,
    /// Any byte of `(){}<>'"$;!|*`[]\` or a space, or `=>`, `==`, `&&` (gates the slower rules).
    pub(super) has_code_punct: bool,
    pub(super) first_slash: Option<usize>,
    /// A `:` occurs (gates the `/:id` placeholder rule).
    pub(super) has_colon: bool,
    /// An escaped space or tab (`%20`, `%09`) occurs.
    pub(super) has_escaped_space: bool,
    /// An escape of an unreserved character (`%2E`, `%41`) occurs: canonicalization decodes it.
    pub(super) has_unreserved_escape: bool,
    /// Some byte that [`is_code_byte`] counts occurs (else no head can hold code).
    pub(super) has_head_code: bool,
    /// An escaped `%` (`%25`) occurs (gates the double-encoding rule).
    pub(super) has_escaped_percent: bool,
}

// Byte classes of the scan table.
pub(super) const C_ALNUM: u8 = 1;
pub(super) const C_CONTROL: u8 = 2;
pub(super) const C_SPACE: u8 = 4;
pub(super) const C_CODE: u8 = 8;
pub(super) const C_SPECIAL: u8 = 16; // `%`, `=`, `&`: need a look at the neighbours
pub(super) const C_COLON: u8 = 32;
pub(super) const C_SLASH: u8 = 64;
pub(super) const C_HEADCODE: u8 = 128; // `,`, `+`, `=`: code in a head, ordinary in a query

pub(super) const fn class_table() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = if b.is_ascii_alphanumeric() || b >= 0x80 {
            C_ALNUM
        } else if b == b' ' || b == b'\t' {
            C_SPACE | C_CODE
        } else if b == b':' {
            C_COLON
        } else if b == b'/' {
            C_SLASH
        } else if b < 0x20 || b == 0x7f {
            C_CONTROL
        } else if matches!(
            b,
            b'(' | b')'
                | b'{'
                | b'}'
                | b'<'
                | b'>'
                | b'\''
                | b'"'
                | b'$'
                | b';'
                | b'!'
                | b'|'
                | b'*'
                | b'`'
                | b'['
                | b']'
                | b'\\'
        ) {
            C_CODE
        } else if b == b'=' {
            C_SPECIAL | C_HEADCODE
        } else if matches!(b, b'%' | b'&') {
            C_SPECIAL
        } else if matches!(b, b',' | b'+') {
            C_HEADCODE
        } else {
            0
        };
        i += 1;
    }
    t
}

pub(super) static CLASS: [u8; 256] = class_table();

/// An escape of this ASCII character is needless or abnormal: unreserved characters never need
/// escaping (canonicalization decodes them), controls never belong in a URL. Escapes of reserved
/// delimiters and of characters that must be escaped (space, `"`, `<`, backtick, ...) are normal:
/// the canonicalizer writes them itself, and its output must pass this validator.
pub(super) const fn needless_escape(v: u8) -> bool {
    v.is_ascii_alphanumeric() || matches!(v, b'-' | b'.' | b'_' | b'~') || v < 0x20 || v == 0x7f
}

pub(super) fn scan(s: &[u8]) -> Scan {
    let mut sc = Scan::default();
    let mut classes = 0u8;
    let mut i = 0;
    while i < s.len() {
        // Eight bytes at a time while none needs a look at its neighbours (most of a URL).
        if let Some(w) = s.get(i..i + 8) {
            let m = w.iter().fold(0, |m, &b| m | CLASS[b as usize]);
            if m & C_SPECIAL == 0 {
                classes |= m;
                i += 8;
                continue;
            }
        }
        let b = s[i];
        let c = CLASS[b as usize];
        classes |= c;
        if c & C_SPECIAL != 0 {
            match b {
                b'%' => {
                    if let (Some(h), Some(l)) = (
                        s.get(i + 1).and_then(|&c| hex_val(c)),
                        s.get(i + 2).and_then(|&c| hex_val(c)),
                    ) {
                        i = scan_escape(s, i, h * 16 + l, &mut sc);
                        continue;
                    }
                    sc.bad_escapes += 1;
                }
                b'=' => {
                    if matches!(s.get(i + 1), Some(b'>' | b'=')) {
                        sc.has_code_punct = true;
                    }
                }
                _ => {
                    if s.get(i + 1) == Some(&b'&') {
                        sc.has_code_punct = true;
                    }
                }
            }
        }
        i += 1;
    }
    sc.has_alnum |= classes & C_ALNUM != 0;
    sc.has_control = classes & C_CONTROL != 0;
    sc.has_space = classes & C_SPACE != 0;
    sc.has_code_punct |= classes & C_CODE != 0;
    sc.has_colon = classes & C_COLON != 0;
    sc.has_head_code = classes & (C_CODE | C_HEADCODE) != 0;
    sc.first_slash = if classes & C_SLASH != 0 {
        crate::url::find_byte(b'/', s)
    } else {
        None
    };
    sc
}

/// One `%XX` escape (value `v`) at `i`, or a run of high-byte escapes; returns the next index.
pub(super) fn scan_escape(s: &[u8], i: usize, v: u8, sc: &mut Scan) -> usize {
    if v < 0x80 {
        if v.is_ascii_alphanumeric() {
            sc.has_alnum = true;
        }
        if v.is_ascii_alphanumeric() || matches!(v, b'-' | b'.' | b'_' | b'~') {
            sc.has_unreserved_escape = true;
        }
        if needless_escape(v) && v != b'\t' {
            sc.suspicious_escape_bytes += 3;
        }
        if v == b' ' || v == b'\t' {
            sc.has_escaped_space = true;
        }
        if v == b'%' {
            sc.has_escaped_percent = true;
        }
        return i + 3;
    }
    // A run of high-byte escapes: fine where it decodes to UTF-8 text.
    let mut i = i;
    let mut buf = [0u8; 64];
    let mut n = 0;
    while i + 2 < s.len() && s[i] == b'%' {
        match (hex_val(s[i + 1]), hex_val(s[i + 2])) {
            (Some(h), Some(l)) if h >= 8 => {
                if n < buf.len() {
                    buf[n] = h * 16 + l;
                }
                n += 1;
                i += 3;
            }
            _ => break,
        }
    }
    if n > buf.len() {
        sc.has_alnum = true; // long encoded text is trusted
        return i;
    }
    // Only the bytes that are not UTF-8 count, so that a stray `%DE` costs the same whether the
    // text after it is raw or (as canonicalization writes it) escaped too.
    let (mut rest, mut invalid, mut valid) = (&buf[..n], 0, false);
    loop {
        match std::str::from_utf8(rest) {
            Ok(v) => {
                valid |= !v.is_empty();
                break;
            }
            Err(e) => {
                valid |= e.valid_up_to() > 0;
                let bad = e.error_len().unwrap_or(rest.len() - e.valid_up_to());
                invalid += bad;
                rest = &rest[e.valid_up_to() + bad..];
            }
        }
    }
    sc.has_alnum |= valid;
    sc.suspicious_escape_bytes += invalid * 3;
    i
}
