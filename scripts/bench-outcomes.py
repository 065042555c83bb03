#!/usr/bin/env python3
"""Fetch outcomes through the gate on Kafka (issue 46): the share of 404s among published URLs
with and without outcomes, and the real pages held.

    scripts/bench-outcomes.py [BIN]                       # the design packages
    PACKAGES="codemirror@5.65.18 ol@10.2.1" SET=holdout scripts/bench-outcomes.py
    WAVES=10 scripts/bench-outcomes.py                    # outcomes streaming in: ten waves

The npm packages (`npm pack`, cached in target/bench-data/outcomes/SET/) are unpacked into one
loopback site (no directory listings, as a static host serves). Every quoted path-like string of
their scripts (context js, the script as source) and every href/src of their HTML pages
(html_attr) becomes a URL event, in two namespaces: `with` (gets outcomes) and `without`
(none). The events are shuffled (seed 46) and sent in two waves through one `crawlsieve gate`
with `kafka.outcomes_topic` set, on a tansu broker and a redis-server of the script's own. After
wave 1 this script fetches every URL the gate published in `with` from the site and publishes
each fetch outcome; then wave 2. It prints, for wave 2: the 404s each namespace published, the
real (2xx) pages `without` published that `with` held, and over the whole run the share of 404s
among what `with` published. `WAVES=N` sends N waves instead, the outcomes of each before the
next (a crawl whose fetch outcomes stream in as it goes); "wave 2" is then every wave after the
first. After the last wave, rounds follow until nothing new is published: what the gate published
is fetched and its outcomes sent, and candidates held before come back when a hit lifts their key
(counted as wave 2). A real page held is one `without` published after wave 1 that `with` never
published by the end.
"""
import importlib.util
import json
import os
import pathlib
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("od", ROOT / "scripts/outcomes-data.py")
od = importlib.util.module_from_spec(spec)
sys.argv, argv = sys.argv[:1], sys.argv
spec.loader.exec_module(od)  # its main() only runs as a script
sys.argv = argv

BIN = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "target/release/crawlsieve")
SET = os.environ.get("SET", "design")
PACKAGES = os.environ.get(
    "PACKAGES",
    "leaflet@1.9.4 swagger-ui-dist@5.17.14 ace-builds@1.36.2 katex@0.16.11 pdfjs-dist@4.4.168 reveal.js@5.1.0",
).split()
WAVES = max(2, int(os.environ.get("WAVES", "2")))
TANSU = os.environ.get("TANSU", str(ROOT / "target/tools/tansu"))
WORK = None


def port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def packages():
    data = ROOT / "target/bench-data/outcomes" / SET
    data.mkdir(parents=True, exist_ok=True)
    for p in PACKAGES:
        # `npm pack NAME@VERSION` writes NAME-VERSION.tgz (a scope's `@s/n` as `s-n`).
        if not (data / (p.lstrip("@").replace("/", "-").replace("@", "-") + ".tgz")).exists():
            subprocess.run(["npm", "pack", "--silent", p], cwd=data, check=True, stdout=subprocess.DEVNULL)
    od.DATA = data
    od.SITE = data / "site"
    od.unpack()


def kafka():
    """confluent-kafka (librdkafka, as the gate): `tansu cat produce` batches were seen skipped
    by librdkafka consumers after a produce to another topic."""
    try:
        import confluent_kafka
    except ImportError:
        py = ROOT / "target/py/bin/python3"
        if pathlib.Path(sys.executable) != py and py.exists():
            os.execv(str(py), [str(py)] + sys.argv)  # scripts/test.sh's virtualenv
        sys.exit("bench-outcomes: needs confluent-kafka: target/py/bin/pip install confluent-kafka==2.6.1")
    return confluent_kafka


def produce(broker, topic, values):
    p = kafka().Producer({"bootstrap.servers": broker})
    for v in values:
        p.produce(topic, json.dumps(v).encode())
        p.poll(0)
    assert p.flush(60) == 0, "undelivered messages"


def consume(broker, topic):
    k = kafka()
    c = k.Consumer({"bootstrap.servers": broker, "group.id": "bench-outcomes",
                    "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([k.TopicPartition(topic, 0, k.OFFSET_BEGINNING)])  # no group to join
    vals, idle = [], time.time()
    while time.time() - idle < 3:
        m = c.poll(0.2)
        if m is None or m.error():
            continue
        vals.append(json.loads(m.value()))
        idle = time.time()
    c.close()
    return vals


def metric(mport, name):
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=5).read().decode()
    except Exception:
        return 0
    return sum(float(l.split()[-1]) for l in text.splitlines() if l.startswith(f"crawlsieve_gate_{name}"))


def wait_for(what, cond, limit=600, state=lambda: ""):
    t = time.time()
    while not cond():
        if time.time() - t > limit:
            sys.exit(f"bench-outcomes: {what} did not happen within {limit} s {state()} "
                     f"(the gate's log and config are in {WORK})")
        time.sleep(0.2)


def main():
    kafka()
    packages()
    base = od.serve()
    events = []
    for source, ctx, strings in od.candidates(base):
        events.extend({"url": s, "source": source, "context": ctx} for s in strings)
    random.Random(46).shuffle(events)
    n = len(events)
    waves = [events[i * n // WAVES:(i + 1) * n // WAVES] for i in range(WAVES)]
    kport, rport, mport = port(), port(), port()
    broker = f"127.0.0.1:{kport}"
    global WORK
    work = WORK = pathlib.Path(tempfile.mkdtemp(prefix="bench-outcomes-"))
    procs = [subprocess.Popen([TANSU, "broker", "--listener-url", f"tcp://{broker}", "--advertised-listener-url",
                               f"tcp://{broker}", "--storage-engine", "memory://tansu/"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    procs.append(subprocess.Popen(["redis-server", "--port", str(rport), "--bind", "127.0.0.1", "--save", "",
                                   "--appendonly", "no", "--dir", str(work)], stdout=subprocess.DEVNULL))
    try:
        for p in (kport, rport):
            wait_for(f"port {p}", lambda: socket.socket().connect_ex(("127.0.0.1", p)) == 0, 30)
        for t in ["urls", "fetch", "outcomes", "audit", "urls.dead-letter"]:
            subprocess.run([TANSU, "topic", "create", "--broker", f"tcp://{broker}", "--partitions", "1", t],
                           check=True, stdout=subprocess.DEVNULL)
        (work / "gate.toml").write_text(f"""
[kafka]
brokers = "{broker}"
audit_topic = "audit"
outcomes_topic = "outcomes"
batch_linger_ms = 20
[kafka.consumer]
"session.timeout.ms" = 6000
[redis]
url = "redis://127.0.0.1:{rport}"
namespace = "with"
fp_rate = 1e-9
[sieve]
allow_private = ["127.0.0.1"]
[metrics]
listen = "127.0.0.1:{mport}"
""")
        gate = subprocess.Popen([BIN, "gate", "--config", str(work / "gate.toml"), "--log-format", "json"],
                                stderr=open(work / "gate.log", "w"))
        procs.append(gate)
        consumed = 0
        published = {"with": {}, "without": {}}
        fetched_status = {}
        outcomes_sent = 0
        # The waves, then rounds with no new wave until nothing new is published: the crawl
        # fetches what the gate published (held candidates put back by a hit included) and
        # publishes the outcomes. Everything after wave 1 counts as "wave 2".
        pending = list(waves)
        w = 0
        while True:
            w += 1
            if pending:
                wave = pending.pop(0)
                produce(broker, "urls", [dict(e, namespace=ns) for ns in ("with", "without") for e in wave])
                consumed += 2 * len(wave)
            time.sleep(1)  # held candidates put back after the last outcomes
            target = consumed + int(metric(mport, "outcome_put_back_total"))
            wait_for(f"round {w} consumed ({target} messages)",
                     lambda: metric(mport, "messages_consumed_total") >= target, 120,
                     lambda: f"consumed {metric(mport, 'messages_consumed_total')}")
            time.sleep(1)
            new = [e for e in consume(broker, "fetch")
                   if e["url"] not in published[e["namespace"]]]
            for e in new:
                if e["url"] not in fetched_status:
                    fetched_status[e["url"]] = od.status(e["url"])
                published[e["namespace"]][e["url"]] = (min(w, 2), e)
            outs = [{"url": e["url"], "status": fetched_status[e["url"]], "source": e.get("source"),
                     "context": e.get("context"), "namespace": "with"}
                    for e in new if e["namespace"] == "with"]
            if not pending and not outs:
                break
            produce(broker, "outcomes", outs)
            outcomes_sent += len(outs)
            wait_for("outcomes read", lambda: metric(mport, "fetch_outcomes_total") >= outcomes_sent)
            time.sleep(2)  # read is counted when decoded: let the batch's counts reach Redis
        put_back = int(metric(mport, "outcome_put_back_total"))
        gate.send_signal(signal.SIGTERM)
        gate.wait(60)
        audit = consume(broker, "audit")
    finally:
        for p in procs:
            p.kill()
    held = [a for a in audit if a.get("reason") == "fetch_misses"]
    (WORK / "published.json").write_text(json.dumps(
        {"published": {ns: {u: [w, e] for u, (w, e) in p.items()} for ns, p in published.items()},
         "status": fetched_status, "held": held}))

    def count(ns, wave, pred):
        return sum(1 for u, (w, _) in published[ns].items() if w == wave and pred(fetched_status[u]))
    miss = lambda s: s in (404, 410)
    real = lambda s: 200 <= s < 300
    b404, a404 = count("without", 2, miss), count("with", 2, miss)
    b2xx, a2xx = count("without", 2, real), count("with", 2, real)
    a_all = len(published["with"])
    a_all404 = sum(1 for u in published["with"] if miss(fetched_status[u]))
    b_all = len(published["without"])
    b_all404 = sum(1 for u in published["without"] if miss(fetched_status[u]))
    held_real = sorted(u for u, (w, _) in published["without"].items()
                       if w == 2 and real(fetched_status[u]) and u not in published["with"])
    print(f"bench-outcomes ({SET}: {' '.join(PACKAGES)}): {len(events)} candidates, {WAVES} waves "
          f"(\"wave 2\": {'the second' if WAVES == 2 else 'waves 2-' + str(WAVES)}), one gate on Kafka")
    print(f"  wave 1 published: with {sum(1 for w, _ in published['with'].values() if w == 1)}, "
          f"without {sum(1 for w, _ in published['without'].values() if w == 1)}")
    print(f"  wave 2, 404s published: without outcomes {b404}, with {a404} "
          f"({100 * (1 - a404 / b404) if b404 else 0:.1f}% fewer)")
    print(f"  wave 2, real (2xx) pages: without outcomes published {b2xx}; with outcomes published {a2xx}, held "
          f"{len(held_real)} ({100 * len(held_real) / b2xx if b2xx else 0:.1f}%)")
    print(f"  whole run, share of 404s among published: without outcomes {100 * b_all404 / max(1, b_all):.1f}% "
          f"({b_all404} of {b_all}), with {100 * a_all404 / max(1, a_all):.1f}% ({a_all404} of {a_all})")
    print(f"  held (fetch_misses, on the audit topic): {len(held)}; put back by a hit: {put_back}; "
          f"rounds after the last wave: {w - WAVES}")
    for u in held_real:
        print(f"    real page held: {u}")


main()
