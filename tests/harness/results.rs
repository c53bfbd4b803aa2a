//! Machine-readable results: `--format=json` of run_harness and check_submission validates against the documented schema
//! (`docs/results.schema.json`), `--format=csv` has a row per run, and the log root holds NVIDIA's
//! summaries.

use super::{assert_ran_invalid, mlperf, scratch};
use serde_json::Value;
use std::path::PathBuf;

/// Checks `value` against `schema` (the JSON Schema keywords the documented schema uses: type,
/// enum, required, properties, additionalProperties, items, $ref to #/$defs); the errors found.
fn validate(value: &Value, schema: &Value, root: &Value, at: &str) -> Vec<String> {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.strip_prefix("#/$defs/").expect("local references only");
        return validate(value, &root["$defs"][name], root, at);
    }
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    if !types.is_empty() && !types.iter().any(|t| *t == kind || (*t == "number" && kind == "integer")) {
        return vec![format!("{at}: a {kind}, the schema says {types:?}")];
    }
    let mut errors = Vec::new();
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(value)
    {
        errors.push(format!("{at}: {value} is none of {allowed:?}"));
    }
    if let Value::Object(fields) = value {
        for required in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            if !fields.contains_key(required) {
                errors.push(format!("{at}: no {required}"));
            }
        }
        for (name, field) in fields {
            match schema["properties"].get(name) {
                Some(property) => errors.extend(validate(field, property, root, &format!("{at}.{name}"))),
                None if schema["additionalProperties"] == Value::Bool(false) => errors.push(format!("{at}: {name} is not in the schema")),
                None => {}
            }
        }
    }
    if let (Value::Array(items), Some(item_schema)) = (value, schema.get("items")) {
        for (i, item) in items.iter().enumerate() {
            errors.extend(validate(item, item_schema, root, &format!("{at}[{i}]")));
        }
    }
    errors
}

#[test]
fn json_results_follow_the_documented_schema_and_the_log_root_has_nvidias_summaries() {
    let cwd = scratch("results-json");
    let run = |format: &str| {
        let out = mlperf(
            &cwd,
            &["-q", "run_harness", "--system_name=CPU-dev", "--benchmarks=resnet50", "--scenarios=singlestream,offline", "--backend=null", "--min_duration=100", format],
        );
        assert_ran_invalid(&out);
        String::from_utf8(out.stdout).unwrap()
    };
    let json: Value = serde_json::from_str(&run("--format=json")).unwrap();
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/results.schema.json")).unwrap()).unwrap();
    assert_eq!(validate(&json, &schema, &schema, "$"), Vec::<String>::new(), "{json:#}");
    assert_eq!(json["runs"].as_array().unwrap().len(), 2);
    assert_eq!(json["runs"][0]["scenario"], "SingleStream");
    // The validator itself refuses what the schema does not allow.
    let mut broken = json.clone();
    broken["runs"][0]["status"] = "GREAT".into();
    broken["runs"][1]["extra"] = 1.into();
    assert_eq!(validate(&broken, &schema, &schema, "$").len(), 2);

    let csv = run("--format=csv");
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("system,benchmark,scenario,workload,mode,status,metric,metric_value,") && lines.len() == 3, "{csv}");
    assert!(lines[2].starts_with("CPU-dev_RS,resnet,Offline,default,PerformanceOnly,"), "{csv}");

    // check_submission on a tree with nothing staged: its findings, in the same schema.
    std::fs::create_dir_all(cwd.join("empty/closed")).unwrap();
    let check = mlperf(&cwd, &["check_submission", "--input=empty", "--format=json"]);
    assert!(!check.status.success(), "findings fail the check");
    let check: Value = serde_json::from_slice(&check.stdout).unwrap();
    assert_eq!(validate(&check, &schema, &schema, "$"), Vec::<String>::new(), "{check:#}");
    assert!(check["check"]["errors"].as_u64().unwrap() > 0 && check["check"]["findings"][0]["fix"].is_string(), "{check:#}");

    let root = mlperf_runtime::fsutil::walk_files(&cwd.join("build/logs")).into_iter().find(|p| p.ends_with("perf_harness_summary.json")).expect("a summary in the log root");
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(&root).unwrap()).unwrap();
    let offline = summary["CPU-dev_RS-default-Offline"]["resnet"].as_str().unwrap();
    assert!(offline.starts_with("samples/s: ") && offline.ends_with(", Result is INVALID"), "{summary:#}");
}
