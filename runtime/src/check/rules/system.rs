//! `systems/<system>.json` as system_check.py reads it: required fields, meaningful (non-empty)
//! fields, and the values it validates.

use crate::check::common::is_truthy;
use crate::check::{Findings, Rule, Tree};
use mlperf_config::system::{MEANINGFUL_FIELDS, REQUIRED_FIELDS, STATUSES, SYSTEM_TYPES};
use serde_json::Value;

/// Checks the description of `system_name`; returns its `system_type` when it has a valid one
/// (the scenario rules depend on it).
pub(crate) fn check(tree: &Tree, system_name: &str, f: &mut Findings) -> Option<String> {
    let path = tree.layout.system_json(system_name);
    if tree.unsafe_at(&path) {
        return None; // a link: reported by the walk, never read
    }
    let Ok(text) = std::fs::read_to_string(&path) else {
        f.error(
            Rule::RequiredFile,
            &path,
            format!("missing system description for results/{system_name}"),
            format!("stage systems/{system_name}.json (generated from systems/<id>.json by `mlperf generate_conf_files`)"),
        );
        return None;
    };
    let json: serde_json::Map<String, Value> = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            f.error(Rule::SystemFields, &path, format!("not a JSON object: {e}"), "regenerate it with `mlperf generate_conf_files`");
            return None;
        }
    };
    for field in REQUIRED_FIELDS {
        if !json.contains_key(*field) {
            f.key_error(Rule::SystemFields, &path, field, format!("required field `{field}` is missing"), format!("add \"{field}\" (use \"N/A\" where nothing applies)"));
        } else if MEANINGFUL_FIELDS.contains(field) && !is_truthy(json.get(*field)) {
            let hint = if *field == "accelerators_per_node" { "a CPU-only system writes \"0\" as a string" } else { "describe it, or write \"N/A\"" };
            f.key_error(Rule::SystemFields, &path, field, format!("`{field}` must not be empty (0, \"\", false and null count as empty)"), hint);
        }
    }
    let text_of = |k: &str| json.get(k).and_then(Value::as_str);
    let bad_value = |f: &mut Findings, key: &str, message: String, fix: String| f.key_error(Rule::SystemValues, &path, key, message, fix);
    if let Some(status) = json.get("status")
        && !status.as_str().is_some_and(|s| STATUSES.contains(&s.to_lowercase().as_str()))
    {
        bad_value(f, "status", format!("invalid status {status}"), format!("use one of {}", STATUSES.join(", ")));
    }
    for (key, expected) in [("division", tree.division.dir_name()), ("submitter", tree.submitter.as_str())] {
        if let Some(value) = json.get(key)
            && !value.as_str().is_some_and(|v| v.eq_ignore_ascii_case(expected))
        {
            bad_value(f, key, format!("{key} is {value}, but the directory says {expected}"), format!("set \"{key}\": \"{expected}\" or move the tree"));
        }
    }
    match json.get("is_network") {
        None => {}
        Some(Value::String(s)) => {
            let network = s.eq_ignore_ascii_case("true");
            let wanted = match tree.division.dir_name() {
                "network" => Some(true),
                "closed" => Some(false),
                _ => None,
            };
            if wanted.is_some_and(|w| w != network) {
                bad_value(
                    f,
                    "is_network",
                    format!("is_network is \"{s}\" in the {} division", tree.division),
                    "omit is_network outside the network division; network submissions set \"true\"".into(),
                );
            }
        }
        Some(other) => {
            bad_value(f, "is_network", format!("is_network is {other}, not a string (the checker calls .lower() on it and fails)"), "omit it, or write it as a string".into())
        }
    }
    let system_type = text_of("system_type")?;
    if !SYSTEM_TYPES.contains(&system_type) {
        bad_value(f, "system_type", format!("invalid system_type \"{system_type}\""), format!("use one of {} (exact spelling)", SYSTEM_TYPES.join(", ")));
        return None;
    }
    Some(system_type.to_string())
}
