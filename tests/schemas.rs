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
        ["keep", "reject", "duplicate"]
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
