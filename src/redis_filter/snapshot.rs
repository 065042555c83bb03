//! Export a namespace to a file and import it back: to migrate between Redis deployments and to
//! recover after Redis lost its data.
//!
//! Format (little-endian), version 1:
//! ```text
//! "CSREDIS\0" | u32 version | u32 header length | header (JSON: namespace, spec, live
//! generations, item counters, export time)
//! for each live generation, for each shard: the shard string (shard_bytes bytes)
//! exact mode: for each generation, shard, bucket: u32 count, count × i64 fingerprints
//! u64 xxh3-64 of every byte before it
//! ```
//! Import verifies the checksum and every size against the header before it writes anything,
//! then writes the keys and publishes the metadata last (with a new instance id, so attached
//! clients drop their local tiers).

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;

use super::conn::{Conn, RedisConfig};
use super::layout::{check_namespace, GenSpec, Keys};
use super::{
    new_instance_id, parse_field, Generations, Mode, NamespaceSpec, RedisFilter, RedisFilterError,
    CREATE_LUA,
};

const MAGIC: &[u8; 8] = b"CSREDIS\0";
const VERSION: u32 = 1;
const CHUNK: u64 = 4 << 20;
const MAX_BUCKET: u32 = 1 << 20;

/// The header of a snapshot file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Header {
    /// Namespace it was exported from.
    pub namespace: String,
    /// Parameters.
    pub spec: NamespaceSpec,
    /// Live generations at export time.
    pub generations: Vec<GenSpec>,
    /// `items:<id>` counters.
    pub items: HashMap<u32, u64>,
    /// Unix seconds of the export.
    pub exported: u64,
}

/// What an export or import moved.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Namespace written or read.
    pub namespace: String,
    /// Generations.
    pub generations: usize,
    /// Bytes of shard strings.
    pub bitmap_bytes: u64,
    /// Exact-mode fingerprints.
    pub fingerprints: u64,
    /// File size.
    pub file_bytes: u64,
}

struct HashingWriter<W: Write> {
    inner: W,
    hash: Xxh3,
    n: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.n += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

struct HashingReader<R: Read> {
    inner: R,
    hash: Xxh3,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
}

fn redis_err(e: redis::RedisError) -> RedisFilterError {
    RedisFilterError::from_redis(e, false)
}

/// Write namespace `ns` to `path` (atomically: a temporary file renamed into place).
pub fn export(cfg: &RedisConfig, ns: &str, path: &Path) -> Result<Summary, RedisFilterError> {
    check_namespace(ns)?;
    let mut conn = Conn::connect(cfg).map_err(redis_err)?;
    let header = export_header(&mut conn, ns)?;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = tempfile_in(dir)?;
    let mut w = HashingWriter {
        inner: BufWriter::with_capacity(1 << 20, File::create(&tmp)?),
        hash: Xxh3::new(),
        n: 0,
    };
    let head = serde_json::to_vec(&header).expect("header serializes");
    w.write_all(MAGIC)?;
    w.write_all(&VERSION.to_le_bytes())?;
    w.write_all(&(head.len() as u32).to_le_bytes())?;
    w.write_all(&head)?;
    let mut sum = Summary {
        namespace: ns.to_string(),
        generations: header.generations.len(),
        bitmap_bytes: 0,
        fingerprints: 0,
        file_bytes: 0,
    };
    sum.bitmap_bytes += export_bitmaps(&mut conn, &mut w, &header, ns)?;
    if header.spec.mode != Mode::Bloom {
        sum.fingerprints += export_fingerprints(&mut conn, &mut w, &header, ns)?;
    }
    let digest = w.hash.digest();
    let mut inner = w.inner;
    inner.write_all(&digest.to_le_bytes())?;
    sum.file_bytes = w.n + 8;
    inner.flush()?;
    inner.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    std::fs::rename(&tmp, path)?;
    Ok(sum)
}

/// 1. The header of `ns` from its metadata (not found when it has none).
fn export_header(conn: &mut Conn, ns: &str) -> Result<Header, RedisFilterError> {
    let meta: HashMap<String, String> = conn
        .query(redis::cmd("HGETALL").arg(Keys::meta(ns)))
        .map_err(redis_err)?;
    if meta.is_empty() {
        return Err(RedisFilterError::NotFound(ns.to_string()));
    }
    let spec: NamespaceSpec = parse_field(&meta, "spec")?;
    let gens: Generations = parse_field(&meta, "gens")?;
    let items = meta
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("items:")?.parse().ok()?, v.parse().ok()?)))
        .collect();
    Ok(Header {
        namespace: ns.to_string(),
        spec,
        generations: gens.live.clone(),
        items,
        exported: super::now_secs(),
    })
}

/// 2. Write every shard string of the Bloom-bits generations to `w`; the bytes written.
fn export_bitmaps(
    conn: &mut Conn,
    w: &mut impl Write,
    header: &Header,
    ns: &str,
) -> Result<u64, RedisFilterError> {
    let mut bitmap_bytes = 0;
    for g in header.generations.iter().filter(|g| g.bitmap) {
        for s in 0..g.shards {
            let key = Keys::shard(ns, g, s);
            let mut off = 0;
            while off < g.shard_bytes {
                let end = (off + CHUNK).min(g.shard_bytes) - 1;
                let part: Vec<u8> = conn
                    .query(redis::cmd("GETRANGE").arg(&key).arg(off).arg(end))
                    .map_err(redis_err)?;
                if part.len() as u64 != end + 1 - off {
                    return Err(RedisFilterError::Corrupt(format!(
                        "{key} is {} bytes short of its {} (was it deleted?)",
                        end + 1 - off - part.len() as u64,
                        g.shard_bytes
                    )));
                }
                w.write_all(&part)?;
                off = end + 1;
            }
            bitmap_bytes += g.shard_bytes;
        }
    }
    Ok(bitmap_bytes)
}

/// 3. Write every fingerprint bucket (count, then members) to `w`; the fingerprints written.
fn export_fingerprints(
    conn: &mut Conn,
    w: &mut impl Write,
    header: &Header,
    ns: &str,
) -> Result<u64, RedisFilterError> {
    let mut fingerprints = 0;
    for g in &header.generations {
        for s in 0..g.shards {
            let keys: Vec<String> = (0..g.buckets).map(|b| Keys::bucket(ns, g, s, b)).collect();
            for chunk in keys.chunks(1000) {
                let cmds = chunk
                    .iter()
                    .map(|k| redis::cmd("SMEMBERS").arg(k).clone())
                    .collect();
                let replies = conn.pipeline(cmds).map_err(redis_err)?;
                for r in replies {
                    let members: Vec<i64> = redis::FromRedisValue::from_redis_value(r)
                        .map_err(|e| RedisFilterError::Corrupt(format!("SMEMBERS: {e}")))?;
                    w.write_all(&(members.len() as u32).to_le_bytes())?;
                    for m in &members {
                        w.write_all(&m.to_le_bytes())?;
                    }
                    fingerprints += members.len() as u64;
                }
            }
        }
    }
    Ok(fingerprints)
}

fn tempfile_in(dir: &Path) -> io::Result<std::path::PathBuf> {
    let name = format!(
        ".crawlsieve-export-{}-{}",
        std::process::id(),
        new_instance_id()
    );
    Ok(dir.join(name))
}

fn read_header<R: Read>(r: &mut R) -> Result<Header, RedisFilterError> {
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic)
        .map_err(|_| RedisFilterError::Snapshot("file too short".into()))?;
    if &magic != MAGIC {
        return Err(RedisFilterError::Snapshot(
            "not a crawlsieve Redis filter snapshot (bad magic)".into(),
        ));
    }
    let mut b4 = [0u8; 4];
    r.read_exact(&mut b4)?;
    let version = u32::from_le_bytes(b4);
    if version != VERSION {
        return Err(RedisFilterError::Snapshot(format!(
            "snapshot version {version}; this build reads {VERSION}"
        )));
    }
    r.read_exact(&mut b4)?;
    let len = u32::from_le_bytes(b4);
    if len > 64 << 20 {
        return Err(RedisFilterError::Snapshot(format!("header of {len} bytes")));
    }
    let mut head = vec![0u8; len as usize];
    r.read_exact(&mut head)
        .map_err(|_| RedisFilterError::Snapshot("truncated header".into()))?;
    let h: Header = serde_json::from_slice(&head)
        .map_err(|e| RedisFilterError::Snapshot(format!("header: {e}")))?;
    check_namespace(&h.namespace)?;
    if h.generations.is_empty() {
        return Err(RedisFilterError::Snapshot("no generation".into()));
    }
    for g in &h.generations {
        g.check()
            .map_err(|e| RedisFilterError::Snapshot(e.to_string()))?;
        if (h.spec.mode != Mode::Bloom) != (g.buckets > 0)
            || (h.spec.mode == Mode::Fingerprints) == g.bitmap
        {
            return Err(RedisFilterError::Snapshot(format!(
                "generation {} does not match the mode {:?}",
                g.id, h.spec.mode
            )));
        }
    }
    Ok(h)
}

/// Walk the body after the header; `sink` gets every shard chunk and bucket.
fn walk_body<R: Read>(
    r: &mut R,
    h: &Header,
    mut shard: impl FnMut(&GenSpec, u32, u64, &[u8]) -> Result<(), RedisFilterError>,
    mut bucket: impl FnMut(&GenSpec, u32, u32, &[i64]) -> Result<(), RedisFilterError>,
) -> Result<(), RedisFilterError> {
    let truncated = || RedisFilterError::Snapshot("truncated body".into());
    let mut buf = vec![0u8; CHUNK as usize];
    for g in h.generations.iter().filter(|g| g.bitmap) {
        for s in 0..g.shards {
            let mut off = 0;
            while off < g.shard_bytes {
                let n = CHUNK.min(g.shard_bytes - off) as usize;
                r.read_exact(&mut buf[..n]).map_err(|_| truncated())?;
                shard(g, s, off, &buf[..n])?;
                off += n as u64;
            }
        }
    }
    if h.spec.mode != Mode::Bloom {
        let mut members = Vec::new();
        for g in &h.generations {
            for s in 0..g.shards {
                for b in 0..g.buckets {
                    let mut b4 = [0u8; 4];
                    r.read_exact(&mut b4).map_err(|_| truncated())?;
                    let n = u32::from_le_bytes(b4);
                    if n > MAX_BUCKET {
                        return Err(RedisFilterError::Snapshot(format!("bucket of {n} entries")));
                    }
                    members.clear();
                    let mut b8 = [0u8; 8];
                    for _ in 0..n {
                        r.read_exact(&mut b8).map_err(|_| truncated())?;
                        members.push(i64::from_le_bytes(b8));
                    }
                    bucket(g, s, b, &members)?;
                }
            }
        }
    }
    Ok(())
}

/// Verify a snapshot completely (checksum and sizes) without touching Redis.
pub fn verify(path: &Path) -> Result<Header, RedisFilterError> {
    let mut r = HashingReader {
        inner: BufReader::with_capacity(1 << 20, File::open(path)?),
        hash: Xxh3::new(),
    };
    let h = read_header(&mut r)?;
    walk_body(&mut r, &h, |_, _, _, _| Ok(()), |_, _, _, _| Ok(()))?;
    let digest = r.hash.digest();
    let mut b8 = [0u8; 8];
    r.inner
        .read_exact(&mut b8)
        .map_err(|_| RedisFilterError::Snapshot("missing checksum".into()))?;
    if u64::from_le_bytes(b8) != digest {
        return Err(RedisFilterError::Snapshot(
            "checksum mismatch: the file is damaged".into(),
        ));
    }
    if r.inner.read(&mut [0u8; 1])? != 0 {
        return Err(RedisFilterError::Snapshot(
            "trailing bytes after the checksum".into(),
        ));
    }
    Ok(h)
}

/// Load a snapshot into namespace `target` (default: the one it was exported from). An
/// existing namespace is an error unless `replace`, which drops it first.
pub fn import(
    cfg: &RedisConfig,
    path: &Path,
    target: Option<&str>,
    replace: bool,
) -> Result<Summary, RedisFilterError> {
    let header = verify(path)?;
    let ns = target.unwrap_or(&header.namespace).to_string();
    check_namespace(&ns)?;
    let mut conn = Conn::connect(cfg).map_err(redis_err)?;
    make_room(&mut conn, cfg, &ns, replace)?;
    let mut sum = Summary {
        namespace: ns.clone(),
        generations: header.generations.len(),
        bitmap_bytes: 0,
        fingerprints: 0,
        file_bytes: std::fs::metadata(path)?.len(),
    };
    let mut r = BufReader::with_capacity(1 << 20, File::open(path)?);
    read_header(&mut r)?;
    let sum_ref = &mut sum;
    import_body(&mut conn, &mut r, &header, &ns)?;
    for g in header.generations.iter().filter(|g| g.bitmap) {
        sum_ref.bitmap_bytes += g.shard_bytes * g.shards as u64;
    }
    publish(&mut conn, &header, &ns)?;
    if header.spec.mode != Mode::Bloom {
        sum.fingerprints += count_fingerprints(&mut conn, &header, &ns)?;
    }
    Ok(sum)
}

/// 1. Refuse a namespace `ns` that exists, or drop it first with `replace`.
fn make_room(
    conn: &mut Conn,
    cfg: &RedisConfig,
    ns: &str,
    replace: bool,
) -> Result<(), RedisFilterError> {
    let exists: bool = conn
        .query(redis::cmd("EXISTS").arg(Keys::meta(ns)))
        .map_err(redis_err)?;
    if exists {
        if !replace {
            return Err(RedisFilterError::Exists(ns.to_string()));
        }
        RedisFilter::drop_namespace(cfg, ns)?;
    }
    Ok(())
}

/// 2. Write the body read from `r` (shard strings and buckets) into the keys of `ns`.
fn import_body<R: Read>(
    conn: &mut Conn,
    r: &mut R,
    header: &Header,
    ns: &str,
) -> Result<(), RedisFilterError> {
    let conn_ref = std::cell::RefCell::new(conn);
    walk_body(
        r,
        header,
        |g, s, off, bytes| {
            let key = Keys::shard(ns, g, s);
            let cmd = if off == 0 {
                redis::cmd("SET").arg(&key).arg(bytes).clone()
            } else {
                redis::cmd("APPEND").arg(&key).arg(bytes).clone()
            };
            conn_ref
                .borrow_mut()
                .query::<Value>(&cmd)
                .map_err(redis_err)?;
            Ok(())
        },
        |g, s, b, members| {
            let key = Keys::bucket(ns, g, s, b);
            let mut cmds = vec![redis::cmd("DEL").arg(&key).clone()];
            for part in members.chunks(1000) {
                cmds.push(redis::cmd("SADD").arg(&key).arg(part).clone());
            }
            if !members.is_empty() {
                conn_ref.borrow_mut().pipeline(cmds).map_err(redis_err)?;
            }
            Ok(())
        },
    )
}

/// 3. Publish the metadata of `ns` (a new instance id) and its item counters, last.
fn publish(conn: &mut Conn, header: &Header, ns: &str) -> Result<(), RedisFilterError> {
    let gens = Generations {
        live: header.generations.clone(),
        retired: vec![],
    };
    let spec_json = serde_json::to_string(&header.spec).expect("spec serializes");
    let gens_json = serde_json::to_string(&gens).expect("gens serialize");
    let meta = Keys::meta(ns);
    let created: i64 = conn
        .script(
            &redis::Script::new(CREATE_LUA),
            &meta,
            &[&spec_json, &gens_json, &new_instance_id()],
        )
        .map_err(redis_err)?;
    if created != 1 {
        return Err(RedisFilterError::Exists(ns.to_string()));
    }
    let mut cmds = Vec::new();
    for (id, n) in &header.items {
        cmds.push(
            redis::cmd("HSET")
                .arg(&meta)
                .arg(format!("items:{id}"))
                .arg(*n)
                .clone(),
        );
    }
    conn.pipeline(cmds).map_err(redis_err)?;
    Ok(())
}

/// 4. The fingerprints now stored in the buckets of `ns`.
fn count_fingerprints(conn: &mut Conn, header: &Header, ns: &str) -> Result<u64, RedisFilterError> {
    let mut fingerprints = 0;
    let mut cmds = Vec::new();
    for g in &header.generations {
        for s in 0..g.shards {
            for b in 0..g.buckets {
                cmds.push(redis::cmd("SCARD").arg(Keys::bucket(ns, g, s, b)).clone());
            }
        }
    }
    for chunk in cmds.chunks(1000) {
        for v in conn.pipeline(chunk.to_vec()).map_err(redis_err)? {
            fingerprints += super::as_int(&v)?.max(0) as u64;
        }
    }
    Ok(fingerprints)
}

use redis::Value;
