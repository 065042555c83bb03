//! Snapshot files: a filter saved to disk and loaded back, never silently corrupted.
//!
//! Format (all integers little-endian):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `CSBLOOM\0` |
//! | 8 | 4 | format version (1) |
//! | 12 | 4 | layout (1 = sectorized, 512-bit blocks, ≤ 4 bits per block, xxh3-128 fingerprints) |
//! | 16 | 4 | k |
//! | 20 | 4 | reserved (0) |
//! | 24 | 8 | blocks |
//! | 32 | 8 | capacity |
//! | 40 | 8 | fp_rate (f64 bits) |
//! | 48 | 8 | items |
//! | 56 | 8 | payload length in bytes (= blocks × 64) |
//! | 64 | … | payload: the bit array as u64 words |
//! | end | 8 | xxh3-64 of everything before it |
//!
//! Saving writes `FILE.tmp`, syncs it and renames it over `FILE`, so a crash leaves the old
//! snapshot or the new one, never half of one.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::sync::atomic::Ordering;

use xxhash_rust::xxh3::Xxh3;

use super::local::{BloomFilter, BloomParams};
use super::storage::Storage;
use super::BloomError;

const MAGIC: &[u8; 8] = b"CSBLOOM\0";
const VERSION: u32 = 1;
const LAYOUT: u32 = 1;
const HEADER: usize = 64;

fn header(f: &BloomFilter) -> [u8; HEADER] {
    let p = f.params();
    let mut h = [0u8; HEADER];
    h[0..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&LAYOUT.to_le_bytes());
    h[16..20].copy_from_slice(&p.k.to_le_bytes());
    h[24..32].copy_from_slice(&p.blocks.to_le_bytes());
    h[32..40].copy_from_slice(&p.capacity.to_le_bytes());
    h[40..48].copy_from_slice(&p.fp_rate.to_bits().to_le_bytes());
    h[48..56].copy_from_slice(&f.items().to_le_bytes());
    h[56..64].copy_from_slice(&(p.blocks * 64).to_le_bytes());
    h
}

/// Write a snapshot of `f` to any writer.
pub fn write_to<W: Write>(f: &BloomFilter, w: W) -> Result<(), BloomError> {
    let mut w = BufWriter::with_capacity(1 << 20, w);
    let mut hasher = Xxh3::new();
    let h = header(f);
    hasher.update(&h);
    w.write_all(&h)?;
    let mut buf = Vec::with_capacity(1 << 16);
    for chunk in f.words().chunks(8192) {
        buf.clear();
        for word in chunk {
            buf.extend_from_slice(&word.load(Ordering::Relaxed).to_le_bytes());
        }
        hasher.update(&buf);
        w.write_all(&buf)?;
    }
    w.write_all(&hasher.digest().to_le_bytes())?;
    w.flush()?;
    Ok(())
}

/// Save atomically to `path` (write `path.tmp`, fsync, rename).
pub fn save(f: &BloomFilter, path: &Path) -> Result<(), BloomError> {
    let tmp = path.with_extension(match path.extension() {
        Some(e) => format!("{}.tmp", e.to_string_lossy()),
        None => "tmp".into(),
    });
    {
        let file = File::create(&tmp)?;
        write_to(f, &file)?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    Ok(())
}

fn u32_at(h: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(h[o..o + 4].try_into().expect("4 bytes"))
}
fn u64_at(h: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(h[o..o + 8].try_into().expect("8 bytes"))
}

/// Read a snapshot from any reader, checking every field and the checksum.
pub fn read_from<R: Read>(r: R) -> Result<BloomFilter, BloomError> {
    let mut r = BufReader::with_capacity(1 << 20, r);
    let mut h = [0u8; HEADER];
    r.read_exact(&mut h).map_err(|e| truncated(e, "header"))?;
    if &h[0..8] != MAGIC {
        return Err(BloomError::Snapshot(
            "not a crawlsieve Bloom snapshot (bad magic)".into(),
        ));
    }
    let version = u32_at(&h, 8);
    if version != VERSION {
        return Err(BloomError::Snapshot(format!(
            "snapshot format version {version}; this build reads version {VERSION}"
        )));
    }
    let layout = u32_at(&h, 12);
    if layout != LAYOUT {
        return Err(BloomError::Snapshot(format!(
            "unknown filter layout {layout}"
        )));
    }
    let params = BloomParams {
        k: u32_at(&h, 16),
        blocks: u64_at(&h, 24),
        capacity: u64_at(&h, 32),
        fp_rate: f64::from_bits(u64_at(&h, 40)),
    };
    params
        .check()
        .map_err(|e| BloomError::Snapshot(format!("damaged header: {e}")))?;
    let items = u64_at(&h, 48);
    let payload = u64_at(&h, 56);
    if payload != params.blocks * 64 {
        return Err(BloomError::Snapshot(format!(
            "damaged header: payload {payload} bytes for {} blocks",
            params.blocks
        )));
    }
    let n_words = usize::try_from(params.blocks * 8)
        .map_err(|_| BloomError::Snapshot("filter too large for this machine".into()))?;
    let mut hasher = Xxh3::new();
    hasher.update(&h);
    let mut storage = Storage::zeroed(n_words).ok_or_else(|| {
        BloomError::Snapshot(format!(
            "its {} blocks ({} bytes) could not be allocated",
            params.blocks,
            params.bytes()
        ))
    })?;
    let words = storage.as_mut_u64();
    let mut buf = vec![0u8; 1 << 16];
    for chunk in words.chunks_mut(buf.len() / 8) {
        let bytes = &mut buf[..chunk.len() * 8];
        r.read_exact(bytes).map_err(|e| truncated(e, "bit array"))?;
        hasher.update(bytes);
        for (w, b) in chunk.iter_mut().zip(bytes.chunks_exact(8)) {
            *w = u64::from_le_bytes(b.try_into().expect("8 bytes"));
        }
    }
    let mut sum = [0u8; 8];
    r.read_exact(&mut sum)
        .map_err(|e| truncated(e, "checksum"))?;
    if u64::from_le_bytes(sum) != hasher.digest() {
        return Err(BloomError::Snapshot(
            "checksum mismatch: the snapshot is damaged".into(),
        ));
    }
    let mut extra = [0u8; 1];
    if r.read(&mut extra)? != 0 {
        return Err(BloomError::Snapshot(
            "trailing bytes after the checksum".into(),
        ));
    }
    Ok(BloomFilter::from_parts(params, storage, items))
}

fn truncated(e: std::io::Error, what: &str) -> BloomError {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        BloomError::Snapshot(format!("truncated snapshot (ends inside the {what})"))
    } else {
        BloomError::Io(e)
    }
}

/// Load a snapshot file.
pub fn load(path: &Path) -> Result<BloomFilter, BloomError> {
    read_from(File::open(path)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::fingerprint;

    fn filled() -> BloomFilter {
        let f = BloomFilter::with_capacity(5_000, 0.01).unwrap();
        for i in 0..3_000u32 {
            f.insert_key(&i.to_le_bytes());
        }
        f
    }

    fn bytes_of(f: &BloomFilter) -> Vec<u8> {
        let mut v = Vec::new();
        write_to(f, &mut v).unwrap();
        v
    }

    #[test]
    fn round_trip() {
        let f = filled();
        let g = read_from(&bytes_of(&f)[..]).unwrap();
        assert_eq!(g.params(), f.params());
        assert_eq!(g.items(), f.items());
        for i in 0..3_000u32 {
            assert!(g.contains(fingerprint(&i.to_le_bytes())));
        }
        assert_eq!(bytes_of(&g), bytes_of(&f));
    }

    #[test]
    fn every_damage_is_an_error() {
        let good = bytes_of(&filled());
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("empty", vec![]),
            ("magic", {
                let mut b = good.clone();
                b[0] ^= 1;
                b
            }),
            ("version", {
                let mut b = good.clone();
                b[8] = 9;
                b
            }),
            ("layout", {
                let mut b = good.clone();
                b[12] = 9;
                b
            }),
            ("k", {
                let mut b = good.clone();
                b[16..20].copy_from_slice(&0u32.to_le_bytes());
                b
            }),
            ("blocks", {
                let mut b = good.clone();
                b[24] ^= 1;
                b
            }),
            ("fp", {
                let mut b = good.clone();
                b[40..48].copy_from_slice(&2.0f64.to_bits().to_le_bytes());
                b
            }),
            ("items", {
                let mut b = good.clone();
                b[48] ^= 1;
                b
            }),
            ("bit flip", {
                let mut b = good.clone();
                b[HEADER + 100] ^= 0x10;
                b
            }),
            ("checksum", {
                let mut b = good.clone();
                let n = b.len();
                b[n - 1] ^= 1;
                b
            }),
            ("truncated", good[..good.len() - 9].to_vec()),
            ("trailing", {
                let mut b = good.clone();
                b.push(0);
                b
            }),
        ];
        for (name, bytes) in cases {
            match read_from(&bytes[..]) {
                Err(BloomError::Snapshot(msg)) => assert!(!msg.is_empty(), "{name}"),
                other => panic!("{name}: expected a snapshot error, got {other:?}"),
            }
        }
    }

    #[test]
    fn save_is_atomic_and_loads() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("state.bloom");
        let f = filled();
        save(&f, &p).unwrap();
        assert!(!dir.path().join("state.bloom.tmp").exists());
        assert_eq!(load(&p).unwrap().items(), f.items());
    }
}
