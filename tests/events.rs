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
        context: Some(crawlsieve::url::Context::Js),
        depth: Some(0),
        discovered_at: None,
        crawl_id: None,
        method: Some(Method::Head),
        metadata: None,
        crawl_delay_s: Some(2.5),
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

/// Issue 13, item 7: every RFC 3339 time the schema's `format: date-time` accepts is accepted
/// by the decoder, and every one it refuses is refused: the same cases through both.
#[test]
fn discovered_at_is_judged_by_schema_and_decoder_alike() {
    let v = validator("url-event");
    let good = [
        "2026-11-23T10:00:00Z",
        "2026-11-23T10:00:00+02:00",
        "2026-11-23T10:00:00-05:30",
        "2026-11-23t10:00:00z",
        "2026-11-23T10:00:00.123456789+00:00",
        "2026-11-23T10:00:00-00:00",
        "2024-02-29T23:59:59Z",
        "2026-12-31T23:59:60Z",
        "2026-11-23T10:00:00.5+14:00",
    ];
    let bad = [
        "yesterday",
        "2026-11-23",
        "2026-11-23T10:00:00",
        "2026-11-23 10:00:00Z",
        "2026-11-23T10:00Z",
        "2026-13-01T00:00:00Z",
        "2026-02-29T00:00:00Z",
        "2026-04-31T00:00:00Z",
        "2026-11-23T24:00:00Z",
        "2026-11-23T10:60:00Z",
        "2026-11-23T10:00:00+2:00",
        "2026-11-23T10:00:00+02",
        "2026-11-23T10:00:00.Z",
        "2026-11-23T10:00:00+24:00",
        "+2026-11-23T10:00:00Z",
    ];
    for (t, want) in good
        .iter()
        .map(|t| (t, true))
        .chain(bad.iter().map(|t| (t, false)))
    {
        let ev = serde_json::json!({"url": "https://a.example/", "discovered_at": t});
        assert_eq!(v.is_valid(&ev), want, "schema on {t:?}");
        let bytes = serde_json::to_vec(&ev).unwrap();
        let got = UrlEvent::decode(&bytes, DEFAULT_MAX_MESSAGE_BYTES);
        assert_eq!(got.is_ok(), want, "decoder on {t:?}: {got:?}");
        if let Err(e) = got {
            assert_eq!(e.code, DeadLetterCode::SchemaInvalid);
        }
    }
}

/// Issue 13, item 11: a byte-order mark, valid JSON nested deeply and lone surrogate escapes
/// are decoded, not dead-lettered as `no_base` or `not_json`.
#[test]
fn bom_deep_nesting_and_lone_surrogates_are_decoded() {
    let bom = "\u{feff}{\"url\": \"https://a.example/x\"}";
    assert_eq!(
        UrlEvent::decode(bom.as_bytes(), DEFAULT_MAX_MESSAGE_BYTES)
            .unwrap()
            .url,
        "https://a.example/x"
    );
    let bare = "\u{feff}https://a.example/y";
    assert_eq!(
        UrlEvent::decode(bare.as_bytes(), DEFAULT_MAX_MESSAGE_BYTES)
            .unwrap()
            .url,
        "https://a.example/y"
    );
    // 200 levels inside metadata: valid JSON, accepted, written out again intact.
    let deep = |n: usize| {
        format!(
            "{{\"url\": \"https://a.example/d\", \"metadata\": {{\"x\": {}1{}}}}}",
            "[".repeat(n),
            "]".repeat(n)
        )
    };
    let ev = UrlEvent::decode(deep(200).as_bytes(), DEFAULT_MAX_MESSAGE_BYTES).unwrap();
    let back = serde_json::to_string(&ev).unwrap();
    assert!(back.contains(&format!("{}1{}", "[".repeat(200), "]".repeat(200))));
    // Far past the limit: refused as schema_invalid with the depth, not as broken JSON.
    let e = UrlEvent::decode(deep(100_000).as_bytes(), usize::MAX).unwrap_err();
    assert_eq!(e.code, DeadLetterCode::SchemaInvalid, "{e:?}");
    assert!(e.detail.contains("levels deep"), "{}", e.detail);
    // A lone surrogate escape is valid JSON syntax: read as U+FFFD; a proper pair is kept.
    let lone = r#"{"url": "https://a.example/s", "metadata": {"t": "a\ud800b", "u": "\udc00", "ok": "\ud83d\ude00", "esc": "\\ud800"}}"#;
    let ev = UrlEvent::decode(lone.as_bytes(), DEFAULT_MAX_MESSAGE_BYTES).unwrap();
    let m = serde_json::to_value(&ev).unwrap()["metadata"].clone();
    assert_eq!(m["t"], "a\u{fffd}b");
    assert_eq!(m["u"], "\u{fffd}");
    assert_eq!(m["ok"], "\u{1f600}");
    assert_eq!(m["esc"], "\\ud800", "an escaped backslash is not an escape");
    // Broken JSON is still not_json.
    let e = UrlEvent::decode(b"{\"url\": ", DEFAULT_MAX_MESSAGE_BYTES).unwrap_err();
    assert_eq!(e.code, DeadLetterCode::NotJson);
}
