//! The JSON Schemas in schemas/ are a contract: they must stay in step with the Rust types.

use crawlsieve::url::Reason;

#[test]
fn verdict_line_schema_lists_exactly_the_reason_codes() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/schemas/verdict-line.v1.json"
    ))
    .unwrap();
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    let codes: Vec<&str> = schema["properties"]["reason"]["oneOf"][1]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let ours: Vec<&str> = Reason::ALL.iter().map(|r| r.code()).collect();
    assert_eq!(
        codes, ours,
        "schemas/verdict-line.v1.json must list every reason code, in order"
    );
    let verdicts = &schema["properties"]["verdict"]["enum"];
    assert_eq!(
        verdicts,
        &serde_json::json!(["keep", "reject", "duplicate"])
    );
}
