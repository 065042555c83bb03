//! Namespace lifecycle: create and attach, connections, generations (refresh, growth,
//! rotation, maintenance), item counters, and dropping a namespace.

use super::*;

pub(super) static CREATE_LUA: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'spec', ARGV[1], 'gens', ARGV[2], 'instance', ARGV[3])
return 1";

/// Add to a field of the namespace's metadata (`items:ID`, `forgets`), never recreating a
/// dropped namespace's.
pub(super) static INCR_ITEMS_LUA: &str = r"
if redis.call('HEXISTS', KEYS[1], 'spec') == 0 then return 0 end
return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])";

static CAS_GENS_LUA: &str = r"
if redis.call('HGET', KEYS[1], 'gens') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'gens', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'gv', 1)
return 1";

impl RedisFilter {
    /// Create `ns` with `spec` (allocating its shards), or attach if it exists with the same
    /// parameters; a different one is [`RedisFilterError::Mismatch`].
    pub fn create(
        cfg: RedisConfig,
        ns: &str,
        spec: &NamespaceSpec,
    ) -> Result<RedisFilter, RedisFilterError> {
        Self::create_inner(cfg, ns, spec, false)
    }

    /// Like [`RedisFilter::create`] but an existing namespace is an error.
    pub fn create_new(
        cfg: RedisConfig,
        ns: &str,
        spec: &NamespaceSpec,
    ) -> Result<RedisFilter, RedisFilterError> {
        Self::create_inner(cfg, ns, spec, true)
    }

    pub(super) fn create_inner(
        cfg: RedisConfig,
        ns: &str,
        spec: &NamespaceSpec,
        must_be_new: bool,
    ) -> Result<RedisFilter, RedisFilterError> {
        layout::check_namespace(ns)?;
        let g0 = spec.first_generation(now_secs())?;
        // Everything is validated before anything is written.
        g0.check()
            .map_err(|e| RedisFilterError::Params(e.to_string()))?;
        let mut conn = Conn::connect(&cfg).map_err(|e| RedisFilterError::from_redis(e, false))?;
        let meta_key = Keys::meta(ns);
        let exists: bool = conn
            .query(redis::cmd("EXISTS").arg(&meta_key))
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        if !exists {
            if let Err(e) = allocate(&mut conn, ns, &g0) {
                // Leave nothing behind: a partial allocation is nobody's.
                let _ = unlink_generation(&mut conn, ns, &g0);
                return Err(e);
            }
            let gens = Generations {
                live: vec![g0.clone()],
                retired: vec![],
            };
            let spec_json = serde_json::to_string(spec).expect("spec serializes");
            let gens_json = serde_json::to_string(&gens).expect("gens serialize");
            let created: i64 = conn
                .script(
                    &redis::Script::new(CREATE_LUA),
                    &meta_key,
                    &[&spec_json, &gens_json, &new_instance_id()],
                )
                .map_err(|e| RedisFilterError::from_redis(e, false))?;
            if created != 1 {
                // Another client created it first: our allocation is nobody's.
                unlink_generation(&mut conn, ns, &g0)?;
                if must_be_new {
                    return Err(RedisFilterError::Exists(ns.to_string()));
                }
            }
        } else if must_be_new {
            return Err(RedisFilterError::Exists(ns.to_string()));
        }
        let expect = Expect {
            capacity: Some(spec.capacity),
            fp_rate: Some(spec.fp_rate),
            k: Some(spec.k),
            mode: Some(spec.mode),
            window: Some(spec.window),
            shards: spec.shards,
        };
        Self::attach_with(cfg, ns, &expect, Some(conn))
    }

    /// Attach to an existing namespace, checking the parameters `expect` names.
    pub fn attach(
        cfg: RedisConfig,
        ns: &str,
        expect: &Expect,
    ) -> Result<RedisFilter, RedisFilterError> {
        layout::check_namespace(ns)?;
        Self::attach_with(cfg, ns, expect, None)
    }

    pub(super) fn attach_with(
        cfg: RedisConfig,
        ns: &str,
        expect: &Expect,
        conn: Option<Conn>,
    ) -> Result<RedisFilter, RedisFilterError> {
        let conn = match conn {
            Some(c) => c,
            None => Conn::connect(&cfg).map_err(|e| RedisFilterError::from_redis(e, false))?,
        };
        let tier = LocalTier::new(cfg.local_tier_slots);
        let mut f = RedisFilter {
            meta_key: Keys::meta(ns),
            ns: ns.to_string(),
            conn: Some(conn),
            mconn: None,
            token: (layout::unique_u64() >> 2).max(1) as i64,
            held: HashMap::new(),
            confirm_q: Vec::new(),
            release_q: Vec::new(),
            force_refresh: false,
            seen_share: 0.0,
            spec: NamespaceSpec::new(1, 0.5),
            gens: Generations {
                live: vec![],
                retired: vec![],
            },
            gens_raw: String::new(),
            gens_version: 0,
            forgets: 0,
            readmit: false,
            readmit_seen: HashSet::new(),
            instance: String::new(),
            items: HashMap::new(),
            pending_items: 0,
            last_refresh: Instant::now(),
            tier,
            doubt: HashSet::new(),
            stats: ClientStats::default(),
            todo: Vec::new(),
            order: Vec::new(),
            seen: Vec::new(),
            spare: Batch::new(false),
            replies: Replies::default(),
            inflight: std::collections::VecDeque::new(),
            epoch: 0,
            warnings: Vec::new(),
            ob: None,
            known: None,
            cfg,
        };
        f.refresh()?;
        let diff = expect.diff(&f.spec);
        if !diff.is_empty() {
            return Err(RedisFilterError::Mismatch {
                ns: ns.to_string(),
                diff: diff.join(", "),
            });
        }
        f.check_server();
        Ok(f)
    }

    /// The namespace's parameters as stored in Redis.
    pub fn spec(&self) -> &NamespaceSpec {
        &self.spec
    }

    /// The live generations as last read.
    pub fn generations(&self) -> &Generations {
        &self.gens
    }

    /// Server settings that defeat this namespace's sizing, found on attach (CONFIG GET may be
    /// refused on managed Redis; then nothing is reported).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    pub(super) fn check_server(&mut self) {
        if self.spec.mode == Mode::Bloom {
            return;
        }
        let r: redis::RedisResult<Vec<String>> = match self.conn() {
            Ok(c) => c.query(
                redis::cmd("CONFIG")
                    .arg("GET")
                    .arg("set-max-intset-entries"),
            ),
            Err(_) => return,
        };
        if let Some(limit) = r
            .ok()
            .and_then(|v| v.get(1).and_then(|x| x.parse::<u64>().ok()))
        {
            if limit < 2 * layout::BUCKET_TARGET {
                self.warnings.push(format!(
                    "Redis set-max-intset-entries is {limit}: fingerprint buckets hold ~{} entries \
                     and past {limit} each becomes a hash table (~10× the memory); set it to 512 \
                     or more",
                    layout::BUCKET_TARGET
                ));
            }
        }
    }

    /// This client's counters.
    pub fn client_stats(&self) -> ClientStats {
        self.stats
    }

    /// The namespace name.
    pub fn namespace(&self) -> &str {
        &self.ns
    }

    /// Where Redis is (the configured URLs without credentials), for messages.
    pub fn address(&self) -> String {
        self.cfg.address()
    }

    pub(super) fn conn(&mut self) -> Result<&mut Conn, RedisFilterError> {
        if self.conn.is_none() {
            let c = Conn::connect(&self.cfg).map_err(|e| RedisFilterError::from_redis(e, false))?;
            self.stats.reconnects += 1;
            self.epoch += 1;
            self.conn = Some(c);
            // Redis may have restarted and lost what the tier remembers.
            self.tier.clear();
            self.last_refresh = Instant::now() - self.cfg.refresh_interval * 2;
        }
        Ok(self.conn.as_mut().expect("just connected"))
    }

    /// The maintenance connection (refreshes, counters, generations, waiting on claims).
    pub(super) fn mconn(&mut self) -> Result<&mut Conn, RedisFilterError> {
        if self.mconn.is_none() {
            let c = Conn::connect(&self.cfg).map_err(|e| RedisFilterError::from_redis(e, false))?;
            self.mconn = Some(c);
        }
        Ok(self.mconn.as_mut().expect("just connected"))
    }

    /// A failure on the maintenance connection: drop it if retrying may help.
    pub(super) fn mfail(&mut self, e: redis::RedisError) -> RedisFilterError {
        let err = RedisFilterError::from_redis(e, false);
        if err.is_retryable() {
            self.mconn = None;
        }
        err
    }

    pub(super) fn fail(&mut self, e: redis::RedisError, ambiguous: bool) -> RedisFilterError {
        let err = RedisFilterError::from_redis(e, ambiguous);
        if err.is_retryable() {
            // Drop the connection: its stream may hold a late reply.
            self.conn = None;
            self.tier.clear();
        }
        err
    }

    pub(super) fn pipeline(
        &mut self,
        cmds: Vec<Cmd>,
        write: bool,
    ) -> Result<Vec<Value>, RedisFilterError> {
        let r = self.conn()?.pipeline(cmds);
        r.map_err(|e| self.fail(e, write))
    }

    /// Re-read the generations now if the refresh interval passed; run growth, rotation and
    /// retirement if due.
    pub(super) fn maybe_refresh(&mut self) -> Result<(), RedisFilterError> {
        if self.growth_near() {
            self.force_refresh = true;
        }
        if self.force_refresh
            || self.last_refresh.elapsed() >= self.cfg.refresh_interval
            || self.conn.is_none()
        {
            self.refresh()?;
        }
        Ok(())
    }

    /// Count `n` URLs newly inserted into the current generation; refresh (and so grow) at the
    /// next call once this client's share could fill it, so a generation never overshoots its
    /// capacity by more than a batch or two, however fast the inserts come.
    pub(super) fn count_items(&mut self, n: u64) {
        self.pending_items += n;
        if self.growth_near() {
            self.force_refresh = true;
        }
    }

    /// Confirmations queued or in flight: inserts the current generation is about to receive.
    pub(super) fn unconfirmed(&self) -> u64 {
        (self.confirm_q.len() + self.inflight.iter().map(|i| i.carried.len()).sum::<usize>()) as u64
    }

    /// Whether the current generation could be full once what this client counted and is
    /// about to insert lands (or this client's uncounted share is 1/32 of it): refresh now.
    pub(super) fn growth_near(&self) -> bool {
        let Some(cur) = self.gens.live.last() else {
            return false;
        };
        let stored = self.items.get(&cur.id).copied().unwrap_or(0);
        stored + self.pending_items + self.unconfirmed() >= cur.capacity
            || self.pending_items.saturating_mul(32) >= cur.capacity
    }

    /// Re-read the namespace from Redis and run maintenance. Called on attach, after a
    /// reconnect and every refresh interval.
    pub fn refresh(&mut self) -> Result<(), RedisFilterError> {
        self.flush_items()?;
        let key = self.meta_key.clone();
        let r: redis::RedisResult<HashMap<String, String>> =
            self.mconn()?.query(redis::cmd("HGETALL").arg(&key));
        let meta = r.map_err(|e| self.mfail(e))?;
        self.last_refresh = Instant::now();
        self.force_refresh = false;
        // Claims never confirmed (a caller that gave up on them) are void after the TTL.
        let ttl = self.cfg.claim_ttl;
        self.held.retain(|_, t| t.elapsed() < ttl);
        if meta.is_empty() || meta.contains_key("dropping") {
            self.tier.clear();
            return Err(RedisFilterError::NotFound(self.ns.clone()));
        }
        let spec: NamespaceSpec = parse_field(&meta, "spec")?;
        let raw = meta.get("gens").cloned().unwrap_or_default();
        let gens: Generations = parse_field(&meta, "gens")?;
        if gens.live.is_empty() {
            return Err(RedisFilterError::Corrupt("no live generation".into()));
        }
        for g in gens.live.iter().chain(gens.retired.iter().map(|r| &r.gen)) {
            g.check()?;
        }
        let instance = meta.get("instance").cloned().unwrap_or_default();
        // URLs were forgotten (`RedisFilter::forget_urls`): the tiers may answer "seen" for them.
        let forgets: u64 = meta
            .get("forgets")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let forgotten = std::mem::replace(&mut self.forgets, forgets) != forgets;
        // A bloom namespace's re-admit set, consulted only while it may hold something.
        let until: u64 = meta
            .get("readmit_until")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        self.readmit = if until > super::forget::now_ms() {
            let key = Keys::readmit(&self.ns);
            let r: redis::RedisResult<u64> = self.mconn()?.query(redis::cmd("SCARD").arg(&key));
            r.map_err(|e| self.mfail(e))? > 0
        } else {
            false
        };
        if forgotten || instance != self.instance || self.gens.retires_into(&gens) {
            // Another filter, a generation left the live set, or URLs were forgotten: what the
            // tiers hold may say "seen" for URLs Redis no longer has.
            self.tier.clear();
            if let Some(k) = self.known.as_mut() {
                k.clear();
            }
        }
        if instance != self.instance {
            self.doubt.clear();
        }
        self.items = meta
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("items:")?.parse().ok()?, v.parse().ok()?)))
            .collect();
        self.spec = spec;
        self.gens = gens;
        self.gens_raw = raw;
        self.gens_version = meta.get("gv").and_then(|v| v.parse().ok()).unwrap_or(0);
        self.instance = instance;
        self.maintain()
    }

    pub(super) fn flush_items(&mut self) -> Result<(), RedisFilterError> {
        if self.pending_items == 0 || self.gens.live.is_empty() {
            return Ok(());
        }
        let field = format!("items:{}", self.gens.current().id);
        let n = std::mem::take(&mut self.pending_items);
        let key = self.meta_key.clone();
        // Not idempotent; a lost increment only delays growth by that many items. Never
        // recreates a dropped namespace's metadata.
        let n_s = n.to_string();
        let r: redis::RedisResult<i64> =
            self.mconn()?
                .script(&redis::Script::new(INCR_ITEMS_LUA), &key, &[&field, &n_s]);
        match r {
            Ok(_) => Ok(()),
            Err(e) => {
                // Not sent, or maybe not: count it again (growth a little early beats late).
                self.pending_items += n;
                Err(self.mfail(e))
            }
        }
    }

    /// Growth, window rotation, retirement and unlinking, agreed through a compare-and-set on
    /// the `gens` field: whoever wins applies it, the others re-read.
    pub(super) fn maintain(&mut self) -> Result<(), RedisFilterError> {
        let now = now_secs();
        let mut next = self.gens.clone();
        let added = self.plan_growth(now, &mut next)?;
        let unlink = plan_retirement(&self.spec, now, &mut next);
        if next == self.gens {
            return Ok(());
        }
        if let Some(g) = &added {
            let ns = self.ns.clone();
            let conn = self.mconn()?;
            allocate(conn, &ns, g)?;
        }
        let raw = serde_json::to_string(&next).expect("gens serialize");
        let old = self.gens_raw.clone();
        let key = self.meta_key.clone();
        let r: redis::RedisResult<i64> =
            self.mconn()?
                .script(&redis::Script::new(CAS_GENS_LUA), &key, &[&old, &raw]);
        let won = r.map_err(|e| self.mfail(e))? == 1;
        if won {
            self.adopt_gens(next, raw, &unlink)?;
        } else {
            self.lost_gens_race(added.as_ref())?;
        }
        Ok(())
    }

    /// Add a generation to `next` when the current one is full (growth) or its window slice is
    /// over (rotation), sealing the current one; returns the generation added.
    fn plan_growth(
        &self,
        now: u64,
        next: &mut Generations,
    ) -> Result<Option<GenSpec>, RedisFilterError> {
        let cur = next.current().clone();
        // What Redis counted, plus the confirmations this client has queued or in flight (they
        // land in the current generation): growing a little early keeps a generation from
        // overshooting its capacity by a whole pipeline of inserts.
        let items = self.items.get(&cur.id).copied().unwrap_or(0) + self.unconfirmed();
        let rotate = self
            .spec
            .window
            .map(|w| now.saturating_sub(cur.created) >= (w / self.spec.window_slices as u64).max(1))
            .unwrap_or(false);
        let mut added = None;
        if items >= cur.capacity || rotate {
            let (cap, p) = if items >= cur.capacity {
                (
                    cur.capacity.saturating_mul(GROWTH),
                    cur.fp_rate * TIGHTENING,
                )
            } else {
                (cur.capacity, cur.fp_rate)
            };
            let g = GenSpec::new(
                cur.id + 1,
                now,
                cap,
                p,
                cur.k,
                Some(cur.shards),
                self.spec.mode.store(),
            )?;
            next.live.last_mut().expect("live").sealed = Some(now);
            next.live.push(g.clone());
            added = Some(g);
        }
        Ok(added)
    }

    /// We won the compare-and-set: take `next` (serialized as `raw`) and unlink the
    /// generations retired past their grace.
    fn adopt_gens(
        &mut self,
        next: Generations,
        raw: String,
        unlink: &[Retired],
    ) -> Result<(), RedisFilterError> {
        // Retirement changes what "seen" means (growth does not).
        if self.gens.retires_into(&next) {
            self.tier.clear();
        }
        self.gens = next;
        self.gens_raw = raw;
        self.gens_version += 1;
        let ns = self.ns.clone();
        let conn = self.mconn()?;
        for r in unlink {
            unlink_generation(conn, &ns, &r.gen)?;
        }
        Ok(())
    }

    /// Someone else changed the generations first: refresh soon, and unlink the generation
    /// `added` for nothing.
    fn lost_gens_race(&mut self, added: Option<&GenSpec>) -> Result<(), RedisFilterError> {
        // Someone else changed it first: take theirs on the next refresh, and drop the
        // generation we allocated for nothing (its nonce makes its keys ours alone).
        self.last_refresh = Instant::now() - self.cfg.refresh_interval * 2;
        if let Some(g) = added {
            let ns = self.ns.clone();
            let conn = self.mconn()?;
            unlink_generation(conn, &ns, g)?;
        }
        Ok(())
    }

    /// Delete a namespace: mark it as being dropped, wait two refresh intervals (attached
    /// clients see the mark at their next refresh and stop, so none writes a key after the
    /// unlinking), then unlink every generation's keys and the metadata. Claims expire by
    /// themselves. Returns whether it existed.
    pub fn drop_namespace(cfg: &RedisConfig, ns: &str) -> Result<bool, RedisFilterError> {
        layout::check_namespace(ns)?;
        let mut conn = Conn::connect(cfg).map_err(|e| RedisFilterError::from_redis(e, false))?;
        let key = Keys::meta(ns);
        let exists: bool = conn
            .query(redis::cmd("EXISTS").arg(&key))
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        if !exists {
            return Ok(false);
        }
        let _: i64 = conn
            .query(redis::cmd("HSET").arg(&key).arg("dropping").arg(now_secs()))
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        std::thread::sleep(cfg.refresh_interval * 2 + Duration::from_millis(200));
        // Read the generations after the wait: growth may have added one meanwhile.
        let meta: HashMap<String, String> = conn
            .query(redis::cmd("HGETALL").arg(&key))
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        // A damaged record (no generations) is dropped too: there is nothing else to unlink.
        if let Ok(gens) = parse_field::<Generations>(&meta, "gens") {
            for g in gens.live.iter().chain(gens.retired.iter().map(|r| &r.gen)) {
                unlink_generation(&mut conn, ns, g)?;
            }
        }
        // The outbox protocol's keys: every client's lease and outbox, then the list.
        let clients = Keys::outbox_clients(ns);
        let ids: Vec<String> = conn
            .query(redis::cmd("SMEMBERS").arg(&clients))
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        for id in &ids {
            let _: i64 = conn
                .query(
                    redis::cmd("UNLINK")
                        .arg(Keys::lease(ns, id))
                        .arg(Keys::outbox(ns, id)),
                )
                .map_err(|e| RedisFilterError::from_redis(e, false))?;
        }
        let _: i64 = conn
            .query(redis::cmd("UNLINK").arg(&clients).arg(Keys::readmit(ns)))
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        let _: i64 = conn
            .query(redis::cmd("UNLINK").arg(&key))
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        Ok(true)
    }
}

/// Every namespace held by the Redis of `cfg` (every master of a cluster), sorted: the
/// metadata keys (`cs:{NS}:meta`) a `SCAN` finds. `bloom list`.
pub fn list_namespaces(cfg: &RedisConfig) -> Result<Vec<String>, RedisFilterError> {
    let keys = scan_keys(cfg, Keys::META_PATTERN)?;
    let names: std::collections::BTreeSet<&str> = keys
        .iter()
        .filter_map(|k| Keys::namespace_of_meta(k))
        .collect();
    Ok(names.into_iter().map(String::from).collect())
}

/// Every key matching `pattern` on the Redis of `cfg` (every master of a cluster: a `SCAN`
/// reaches one node), sorted and without repeats.
pub fn scan_keys(cfg: &RedisConfig, pattern: &str) -> Result<Vec<String>, RedisFilterError> {
    let err = |e| RedisFilterError::from_redis(e, false);
    let mut conn = Conn::connect(cfg).map_err(err)?;
    let mut nodes = Vec::new();
    if let Conn::Cluster(_) = conn {
        // CLUSTER NODES: `id ip:port@bus flags …`, one line a node.
        let text: String = conn
            .query(redis::cmd("CLUSTER").arg("NODES"))
            .map_err(err)?;
        for line in text.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            let flags = f
                .get(2)
                .map_or(Vec::new(), |x| x.split(',').collect::<Vec<_>>());
            if flags.contains(&"master") && !flags.contains(&"fail") {
                let addr = f[1].split('@').next().unwrap_or_default();
                nodes.push(node_config(cfg, addr)?);
            }
        }
    }
    let mut found = std::collections::BTreeSet::new();
    let mut scan = |c: &mut Conn| -> Result<(), RedisFilterError> {
        let mut cursor = 0u64;
        loop {
            let (next, keys): (u64, Vec<String>) = c
                .query(
                    redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(pattern)
                        .arg("COUNT")
                        .arg(1000),
                )
                .map_err(err)?;
            found.extend(keys);
            if next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    };
    if nodes.is_empty() {
        scan(&mut conn)?;
    } else {
        for node in &nodes {
            scan(&mut Conn::connect(node).map_err(err)?)?;
        }
    }
    Ok(found.into_iter().collect())
}

/// `cfg`'s first seed, pointed at the cluster node `addr` (`ip:port`) as a single node: the
/// same scheme, credentials and TLS files.
fn node_config(cfg: &RedisConfig, addr: &str) -> Result<RedisConfig, RedisFilterError> {
    let bad = || RedisFilterError::Corrupt(format!("CLUSTER NODES names {addr:?}, not ip:port"));
    let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    let mut u = url::Url::parse(&cfg.urls[0])
        .map_err(|e| RedisFilterError::Params(format!("{:?}: {e}", cfg.address())))?;
    // A node that announces no address (`:7000@17000`) is reached at the seed's host, as the
    // cluster client does; an IPv6 address goes in brackets.
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if !host.is_empty() {
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        u.set_host(Some(&host)).map_err(|_| bad())?;
    }
    u.set_port(Some(port)).map_err(|_| bad())?;
    let mut node = cfg.clone();
    node.urls = vec![u.to_string()];
    node.cluster = false;
    Ok(node)
}

/// Retire from `next` the sealed generations past the window, and take out of it the retired
/// ones past their grace: those are returned, to be unlinked.
fn plan_retirement(spec: &NamespaceSpec, now: u64, next: &mut Generations) -> Vec<Retired> {
    if let Some(w) = spec.window {
        let (keep, gone): (Vec<_>, Vec<_>) = next
            .live
            .drain(..)
            .partition(|g| g.sealed.map(|s| now.saturating_sub(s) < w).unwrap_or(true));
        next.live = keep;
        next.retired
            .extend(gone.into_iter().map(|gen| Retired { gen, retired: now }));
    }
    let (unlink, keep): (Vec<_>, Vec<_>) = next
        .retired
        .drain(..)
        .partition(|r| now.saturating_sub(r.retired) >= RETIRE_GRACE_SECS);
    next.retired = keep;
    unlink
}

pub(super) fn parse_field<T: serde::de::DeserializeOwned>(
    meta: &HashMap<String, String>,
    field: &str,
) -> Result<T, RedisFilterError> {
    let raw = meta
        .get(field)
        .ok_or_else(|| RedisFilterError::Corrupt(format!("metadata has no {field:?} field")))?;
    serde_json::from_str(raw)
        .map_err(|e| RedisFilterError::Corrupt(format!("metadata field {field:?}: {e}")))
}

pub(super) fn as_int(v: &Value) -> Result<i64, RedisFilterError> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Nil => Ok(0),
        other => Err(RedisFilterError::Corrupt(format!(
            "expected an integer reply, got {other:?}"
        ))),
    }
}

/// Create a generation's shard strings at full size (idempotent: writes only the reserved
/// last byte), so the hot path never grows a string.
pub(super) fn allocate(conn: &mut Conn, ns: &str, g: &GenSpec) -> Result<(), RedisFilterError> {
    if !g.bitmap {
        return Ok(()); // intset buckets are created by their first SADD
    }
    check_room(conn, g.allocated_bytes())?;
    let cmds: Vec<Cmd> = (0..g.shards)
        .map(|s| {
            redis::cmd("SETRANGE")
                .arg(Keys::shard(ns, g, s))
                .arg(g.shard_bytes - 1)
                .arg(&b"\0"[..])
                .clone()
        })
        .collect();
    for chunk in cmds.chunks(1000) {
        conn.pipeline(chunk.to_vec())
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
    }
    Ok(())
}

/// Refuse to allocate `bytes` where Redis has not got them: above its `maxmemory` (or, without
/// one, its machine's memory) minus what it uses, Redis would evict keys or be killed. Where
/// `INFO` is refused (some managed Redis) nothing is checked.
pub(super) fn check_room(conn: &mut Conn, bytes: u64) -> Result<(), RedisFilterError> {
    let Ok(info) = conn.query::<String>(redis::cmd("INFO").arg("memory")) else {
        return Ok(());
    };
    let field = |name: &str| -> Option<u64> {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.trim().parse().ok())
    };
    let used = field("used_memory").unwrap_or(0);
    let limit = match field("maxmemory") {
        Some(m) if m > 0 => m,
        _ => field("total_system_memory").unwrap_or(u64::MAX),
    };
    let room = limit.saturating_sub(used);
    if bytes > room / 10 * 9 {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        return Err(RedisFilterError::Params(format!(
            "this generation needs {:.2} GiB of Redis memory at creation, and Redis has {:.2} GiB \
             free (limit {:.2} GiB, used {:.2} GiB): lower the capacity, raise the FP rate, use \
             fingerprints mode (it grows as it fills), or give Redis more memory",
            gib(bytes),
            gib(room),
            gib(limit),
            gib(used)
        )));
    }
    Ok(())
}

/// UNLINK every key of a generation (one key per command: keys live in different slots).
pub(super) fn unlink_generation(
    conn: &mut Conn,
    ns: &str,
    g: &GenSpec,
) -> Result<(), RedisFilterError> {
    let mut keys = Vec::new();
    for s in 0..g.shards {
        if g.bitmap {
            keys.push(Keys::shard(ns, g, s));
        }
        for b in 0..g.buckets {
            keys.push(Keys::bucket(ns, g, s, b));
        }
    }
    for chunk in keys.chunks(1000) {
        let cmds = chunk
            .iter()
            .map(|k| redis::cmd("UNLINK").arg(k).clone())
            .collect();
        conn.pipeline(cmds)
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
    }
    Ok(())
}
