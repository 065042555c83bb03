//! Every event fixture validates against its JSON Schema and round-trips through the Rust type;
//! events the code builds validate too; invalid inputs are refused by both the schema and the
//! decoder.

mod common;

use common::schema_validator as validator;
use crawlsieve::events::{
    DeadLetter, DeadLetterCode, FetchEvent, Method, RejectedEvent, UrlEvent,
    DEFAULT_MAX_MESSAGE_BYTES,
};
use crawlsieve::url::Reason;
use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;

fn dir(rel: &str) -> String {
    format!("{}/{rel}", env!("CARGO_MANIFEST_DIR"))
}

fn fixtures(file: &str) -> Vec<Value> {
    std::fs::read_to_string(dir(&format!("tests/data/events/{file}")))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{file}: {e}: {l}")))
        .collect()
}

fn round_trip<T: DeserializeOwned + Serialize>(name: &str) -> usize {
    let v = validator(name);
    let all = fixtures(&format!("{name}.valid.jsonl"));
    for f in &all {
        if let Err(e) = v.validate(f) {
            panic!("{name} fixture {f} fails its schema: {e}");
        }
        let t: T = serde_json::from_value(f.clone()).unwrap_or_else(|e| panic!("{name}: {e}: {f}"));
        assert_eq!(&serde_json::to_value(&t).unwrap(), f, "{name} round trip");
    }
    all.len()
}

#[test]
fn fixtures_validate_and_round_trip() {
    assert!(round_trip::<UrlEvent>("url-event") >= 5);
    assert!(round_trip::<FetchEvent>("fetch-event") >= 2);
    assert!(round_trip::<RejectedEvent>("rejected-event") >= 2);
    assert!(round_trip::<DeadLetter>("dead-letter") >= 2);
    // The decoder accepts every valid URL event as a message value.
    for f in fixtures("url-event.valid.jsonl") {
        let bytes = serde_json::to_vec(&f).unwrap();
        let ev = UrlEvent::decode(&bytes, DEFAULT_MAX_MESSAGE_BYTES).unwrap();
        assert_eq!(serde_json::to_value(&ev).unwrap(), f);
    }
}

#[test]
fn invalid_url_events_are_refused_by_schema_and_decoder_alike() {
    let v = validator("url-event");
    for f in fixtures("url-event.invalid.jsonl") {
        assert!(!v.is_valid(&f), "the schema accepts {f}");
        let bytes = serde_json::to_vec(&f).unwrap();
        let e = UrlEvent::decode(&bytes, DEFAULT_MAX_MESSAGE_BYTES).unwrap_err();
        assert_eq!(e.code, DeadLetterCode::SchemaInvalid, "{f}: {e:?}");
    }
}

#[test]
fn events_the_gate_builds_validate() {
    let fetch = FetchEvent {
        url: "https://example.com/a".into(),
        original: "HTTP://Example.com/a#x".into(),
        pattern: "/a".into(),
        host: "example.com".into(),
        namespace: "default".into(),
        source: None,
        depth: Some(0),
        discovered_at: None,
        crawl_id: None,
        method: Some(Method::Head),
        metadata: None,
        gated_at: crawlsieve::events::now_rfc3339(),
    };
    let v = validator("fetch-event");
    assert!(
        v.is_valid(&serde_json::to_value(&fetch).unwrap()),
        "{fetch:?}"
    );
    let rv = validator("rejected-event");
    for reason in Reason::ALL {
        let r = RejectedEvent {
            url: "x".into(),
            reason,
            namespace: None,
            source: None,
            crawl_id: None,
            gated_at: crawlsieve::events::now_rfc3339(),
        };
        assert!(
            rv.is_valid(&serde_json::to_value(&r).unwrap()),
            "{reason:?}"
        );
    }
    let dv = validator("dead-letter");
    let inputs: [&[u8]; 5] = [
        &[b'x'; 100],
        b"\xff\xfe{",
        b"{\"url\": ",
        b"{\"ulr\": 1}",
        b"   ",
    ];
    for value in inputs {
        let e = UrlEvent::decode(value, 64).unwrap_err();
        let d = DeadLetter::new(&e, "urls", 1, 99, None, value);
        let j = serde_json::to_value(&d).unwrap();
        if let Err(err) = dv.validate(&j) {
            panic!("{j}: {err}");
        }
        assert_eq!(j["error"], e.code.code());
    }
}
