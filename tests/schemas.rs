//! The JSON Schemas in schemas/ are a contract: they must stay in step with the Rust types.

use crawlsieve::events::DeadLetterCode;
use crawlsieve::url::Reason;

/// The strings of the enum at JSON pointer `at` in `schemas/<file>`.
fn schema_enum(file: &str, at: &str) -> Vec<String> {
    let path = format!("{}/schemas/{file}", env!("CARGO_MANIFEST_DIR"));
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    schema
        .pointer(at)
        .and_then(|v| v.as_array())
        .unwrap_or_else(|| panic!("{file}: no enum at {at}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

fn reason_codes() -> Vec<String> {
    Reason::ALL.iter().map(|r| r.code().to_string()).collect()
}

#[test]
fn verdict_line_schema_lists_exactly_the_reason_codes() {
    assert_eq!(
        schema_enum("verdict-line.v1.json", "/properties/reason/oneOf/1/enum"),
        reason_codes(),
        "schemas/verdict-line.v1.json must list every reason code, in order"
    );
    assert_eq!(
        schema_enum("verdict-line.v1.json", "/properties/verdict/enum"),
        ["keep", "reject", "duplicate", "held"]
    );
}

#[test]
fn event_schemas_list_exactly_the_codes() {
    assert_eq!(
        schema_enum("rejected-event.v1.json", "/properties/reason/enum"),
        reason_codes()
    );
    let dead: Vec<String> = DeadLetterCode::ALL
        .iter()
        .map(|c| c.code().to_string())
        .collect();
    assert_eq!(
        schema_enum("dead-letter.v1.json", "/properties/error/enum"),
        dead
    );
}

#[test]
fn filter_api_lists_exactly_the_reason_codes() {
    assert_eq!(
        schema_enum(
            "filter-api.v1.openapi.json",
            "/components/schemas/Reason/enum"
        ),
        reason_codes(),
        "the OpenAPI document's Reason must list every reason code, in order"
    );
}

/// The cluster-assignment event moved to version 2 (issue 43: `rendered`, `features.timings`).
/// An event the render stage publishes validates against version 2, and a version-1 consumer —
/// the version-1 fields as a type that ignores fields it does not know, serde's default — reads
/// every field it knows unchanged. A version-1 *validator* sees only the two added properties.
#[test]
fn a_version_2_assignment_is_read_by_version_1_consumers() {
    use crawlsieve::render::stage::{AssignmentEvent, FeatureSummary};
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct V1Features {
        title: String,
        text_chars: usize,
        html_bytes: usize,
        simhash: String,
        phash: Option<String>,
        nodes: u32,
    }
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct V1 {
        url: String,
        final_url: String,
        status: u16,
        cluster_id: String,
        canonical_url: String,
        is_canonical: bool,
        rule: Option<String>,
        similarity: serde_json::Value,
        features: V1Features,
        namespace: String,
        error: String,
        rendered_at: String,
    }
    let load = |f: &str| -> serde_json::Value {
        let p = format!("{}/schemas/{f}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    for (rendered, timings) in [
        (false, None),
        (
            true,
            Some(crawlsieve::page::Timings {
                ttfb_ms: 3.0,
                dcl_ms: 20.5,
                load_ms: 31.0,
            }),
        ),
    ] {
        let ev = AssignmentEvent {
            url: "https://h.example/a".into(),
            final_url: "https://h.example/a".into(),
            status: 200,
            cluster_id: "cluster-0123456789ab".into(),
            canonical_url: "https://h.example/a".into(),
            is_canonical: true,
            rule: None,
            similarity: Default::default(),
            features: FeatureSummary {
                title: "A".into(),
                text_chars: 900,
                html_bytes: 4000,
                simhash: "00ff00ff00ff00ff".into(),
                phash: rendered.then(|| "0123456789abcdef".into()),
                nodes: 120,
                timings,
            },
            namespace: "default".into(),
            error: String::new(),
            rendered_at: "2026-11-28T12:00:00Z".into(),
            rendered,
        };
        let doc = serde_json::to_value(&ev).unwrap();
        let v2 = jsonschema::validator_for(&load("cluster-assignment.v2.json")).unwrap();
        if let Err(e) = v2.validate(&doc) {
            panic!("version 2: {e}: {doc}");
        }
        let old: V1 = serde_json::from_value(doc.clone()).unwrap();
        assert_eq!(old.url, ev.url);
        assert_eq!(old.cluster_id, ev.cluster_id);
        assert_eq!(old.features.phash, ev.features.phash);
        assert_eq!(old.features.nodes, 120);
        assert_eq!(old.similarity["visual"], 0.0);
        // A strict version-1 validator objects to the added properties and to nothing else.
        let v1 = jsonschema::validator_for(&load("cluster-assignment.v1.json")).unwrap();
        let mut stripped = doc.clone();
        stripped.as_object_mut().unwrap().remove("rendered");
        stripped["features"]
            .as_object_mut()
            .unwrap()
            .remove("timings");
        assert!(v1.is_valid(&stripped), "{stripped}");
        assert!(!v1.is_valid(&doc));
    }
}
