//! `mlperf.conf`, `user.conf` and `audit.config` with LoadGen's exact semantics
//! (`TestSettings::FromConfig`, test_settings_internal.cc in LoadGen 6.0.17):
//!
//! * a line is whitespace-separated tokens `KEY = VALUE`; the `=` must be its own token, so
//!   `a.b.c=1` alone on a line is silently ignored;
//! * a `#` token ends the line unless a value is expected; after a value every further token is
//!   another value for the same key (so `k = 1 # note` is an error: `#` is not a number);
//! * a value must be consumed entirely by `strtoul(.., 0)` (decimal, `0x` hex, leading-0 octal) or
//!   by `strtod`; later lines override earlier ones;
//! * lookup order is `model.scenario.key`, `*.scenario.key`, `model.*.key`, `*.*.key`; integer keys
//!   go through `strtoull` (so `0.5` reads as 0) and some keys are read from a fixed scenario
//!   (`Server.target_latency`, `Offline.target_qps`, ...); seeds come only from mlperf.conf.

use std::collections::BTreeMap;

/// A parse error, as LoadGen reports it (`error_invalid_config`).
#[derive(Debug, Clone, PartialEq)]
pub struct ConfError {
    pub line: usize,
    pub message: String,
}

/// A parsed conf file: key -> (value token, line).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfFile {
    entries: BTreeMap<String, (String, usize)>,
}

/// Length of the prefix of `s` that C's `strtoul(s, &end, 0)` consumes (0 if none).
fn strtoul_len(s: &str) -> usize {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && (b[i] as char).is_ascii_whitespace() {
        i += 1;
    }
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let digits_start;
    let radix_digit: fn(u8) -> bool;
    if b.len() > i + 1 && b[i] == b'0' && (b[i + 1] == b'x' || b[i + 1] == b'X') && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit) {
        digits_start = i + 2;
        radix_digit = |c| c.is_ascii_hexdigit();
    } else if b.get(i) == Some(&b'0') {
        digits_start = i;
        radix_digit = |c| (b'0'..=b'7').contains(&c);
    } else {
        digits_start = i;
        radix_digit = |c| c.is_ascii_digit();
    }
    let mut j = digits_start;
    while j < b.len() && radix_digit(b[j]) {
        j += 1;
    }
    if j == digits_start { 0 } else { j }
}

/// Whether C's `strtod` consumes all of `s` (decimal or hex floats, inf, nan).
fn strtod_whole(s: &str) -> bool {
    let t = s.strip_prefix(['+', '-']).unwrap_or(s);
    let lower = t.to_ascii_lowercase();
    if ["inf", "infinity", "nan"].contains(&lower.as_str()) || (lower.starts_with("nan(") && lower.ends_with(')')) {
        return true;
    }
    if let Some(hex) = lower.strip_prefix("0x") {
        let (mantissa, exp) = match hex.split_once('p') {
            Some((m, e)) => (m, Some(e)),
            None => (hex, None),
        };
        let digits = mantissa.replacen('.', "", 1);
        let mantissa_ok = !digits.is_empty() && digits.chars().all(|c| c.is_ascii_hexdigit()) && mantissa.matches('.').count() <= 1;
        let exp_ok = exp.is_none_or(|e| {
            let e = e.strip_prefix(['+', '-']).unwrap_or(e);
            !e.is_empty() && e.chars().all(|c| c.is_ascii_digit())
        });
        return mantissa_ok && exp_ok;
    }
    // Rust's float grammar is C's decimal grammar minus forms Rust also rejects ("1." and ".5" are
    // accepted by both); it rejects "_" which C rejects too.
    !t.is_empty() && t.chars().next().is_some_and(|c| c.is_ascii_digit() || c == '.') && t.parse::<f64>().is_ok()
}

/// C's `strtoull(s, nullptr, 0)` value (wrapping negation as C does; overflow saturates).
fn strtoull(s: &str) -> u64 {
    let len = strtoul_len(s);
    let t = &s[..len];
    let (neg, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let v = if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).unwrap_or(u64::MAX)
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).unwrap_or(u64::MAX)
    } else {
        t.parse().unwrap_or(if t.is_empty() { 0 } else { u64::MAX })
    };
    if neg { v.wrapping_neg() } else { v }
}

/// C's `strtod(s, nullptr)` for tokens the parser accepted.
fn strtod(s: &str) -> f64 {
    if strtoul_len(s) == s.len() {
        // An integer token (possibly hex or octal) read as a double: strtod reads it as decimal or hex.
        let t = s.strip_prefix('+').unwrap_or(s);
        if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            return u64::from_str_radix(hex, 16).map_or(f64::NAN, |v| v as f64);
        }
        return t.parse().unwrap_or(f64::NAN);
    }
    let lower = s.to_ascii_lowercase();
    let (neg, body) = match lower.strip_prefix('-') {
        Some(rest) => (true, rest.to_string()),
        None => (false, lower.trim_start_matches('+').to_string()),
    };
    let v = if let Some(hex) = body.strip_prefix("0x") {
        let (m, e) = hex.split_once('p').unwrap_or((hex, "0"));
        let (int, frac) = m.split_once('.').unwrap_or((m, ""));
        let mut value = 0f64;
        for c in int.chars().chain(frac.chars()) {
            value = value * 16.0 + c.to_digit(16).unwrap_or(0) as f64;
        }
        value * 2f64.powi(e.parse::<i32>().unwrap_or(0) - 4 * frac.len() as i32)
    } else {
        body.parse().unwrap_or(f64::NAN)
    };
    if neg { -v } else { v }
}

impl ConfFile {
    /// Parses with LoadGen's token rules; errors are the lines LoadGen would reject.
    pub fn parse(text: &str) -> Result<ConfFile, Vec<ConfError>> {
        let mut entries = BTreeMap::new();
        let mut errors = Vec::new();
        // std::getline splits on '\n' only; a trailing '\r' is whitespace to `>>`.
        for (index, line) in text.split('\n').enumerate() {
            let line_nr = index + 1;
            let mut key = String::new();
            let mut looking_for = 0;
            for token in line.split_ascii_whitespace() {
                if token == "#" && looking_for != 2 {
                    break;
                }
                if looking_for == 2 {
                    if strtoul_len(token) == token.len() || strtod_whole(token) {
                        entries.insert(key.clone(), (token.to_string(), line_nr));
                        continue;
                    }
                    errors.push(ConfError { line: line_nr, message: format!("value needs to be integer or double, line={line_nr}") });
                    break;
                }
                if looking_for == 1 && token != "=" {
                    errors.push(ConfError { line: line_nr, message: format!("expected 'key=value', line={line_nr}") });
                    break;
                }
                if looking_for == 0 {
                    key = token.to_string();
                }
                looking_for += 1;
            }
        }
        if errors.is_empty() { Ok(ConfFile { entries }) } else { Err(errors) }
    }

    /// The raw value for `model.scenario.key` after LoadGen's wildcard lookup.
    pub fn lookup(&self, model: &str, scenario: &str, key: &str) -> Option<&str> {
        [format!("{model}.{scenario}.{key}"), format!("*.{scenario}.{key}"), format!("{model}.*.{key}"), format!("*.*.{key}")]
            .iter()
            .find_map(|k| self.entries.get(k))
            .map(|(v, _)| v.as_str())
    }

    /// Every `key = value` in the file (fully qualified keys).
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, (v, _))| (k.as_str(), v.as_str()))
    }
}

/// The `TestSettings` fields a submission's validity depends on, as LoadGen computes them.
#[derive(Debug, Clone, PartialEq)]
pub struct EffectiveSettings {
    pub qsl_rng_seed: u64,
    pub sample_index_rng_seed: u64,
    pub schedule_rng_seed: u64,
    pub offline_expected_qps: f64,
    pub server_target_qps: f64,
    pub server_target_latency_ns: u64,
    pub server_target_latency_percentile: f64,
    pub single_stream_expected_latency_ns: f64,
    pub single_stream_target_latency_percentile: f64,
    pub multi_stream_expected_latency_ns: f64,
    pub multi_stream_target_latency_percentile: f64,
    pub multi_stream_samples_per_query: u64,
    pub min_duration_ms: u64,
    pub max_duration_ms: u64,
    pub min_query_count: u64,
    pub max_query_count: u64,
    pub performance_sample_count_override: u64,
    pub server_coalesce_queries: bool,
    pub server_max_async_queries: u64,
    pub use_token_latencies: bool,
    pub server_ttft_latency_ns: u64,
    pub server_tpot_latency_ns: u64,
    pub sample_concatenate_permutation: bool,
}

impl Default for EffectiveSettings {
    /// `TestSettings`'s constructor defaults (test_settings.h).
    fn default() -> Self {
        EffectiveSettings {
            qsl_rng_seed: 0,
            sample_index_rng_seed: 0,
            schedule_rng_seed: 0,
            offline_expected_qps: 1.0,
            server_target_qps: 1.0,
            server_target_latency_ns: 100_000_000,
            server_target_latency_percentile: 0.99,
            single_stream_expected_latency_ns: 1_000_000.0,
            single_stream_target_latency_percentile: 0.90,
            multi_stream_expected_latency_ns: 8_000_000.0,
            multi_stream_target_latency_percentile: 0.99,
            multi_stream_samples_per_query: 8,
            min_duration_ms: 10_000,
            max_duration_ms: 0,
            min_query_count: 100,
            max_query_count: 0,
            performance_sample_count_override: 0,
            server_coalesce_queries: false,
            server_max_async_queries: 0,
            use_token_latencies: false,
            server_ttft_latency_ns: 100_000_000,
            server_tpot_latency_ns: 100_000_000,
            sample_concatenate_permutation: false,
        }
    }
}

/// Whether the file applies seeds (only the compiled-in mlperf.conf does).
#[derive(Clone, Copy, PartialEq)]
pub enum ConfKind {
    MlperfConf,
    UserConf,
}

impl EffectiveSettings {
    /// Applies one file the way `FromConfig` does (only keys the file has change anything).
    pub fn apply(&mut self, conf: &ConfFile, kind: ConfKind, model: &str, scenario: &str) {
        let int = |s: &str, k: &str| conf.lookup(model, s, k).map(strtoull);
        let real = |s: &str, k: &str| conf.lookup(model, s, k).map(strtod);
        if kind == ConfKind::MlperfConf {
            if let Some(v) = int(scenario, "qsl_rng_seed") {
                self.qsl_rng_seed = v;
            }
            if let Some(v) = int(scenario, "sample_index_rng_seed") {
                self.sample_index_rng_seed = v;
            }
            if let Some(v) = int(scenario, "schedule_rng_seed") {
                self.schedule_rng_seed = v;
            }
        }
        if let Some(v) = int(scenario, "use_token_latencies") {
            self.use_token_latencies = v == 1;
        }
        if self.use_token_latencies {
            if let Some(v) = int("Server", "ttft_latency") {
                self.server_ttft_latency_ns = v.wrapping_mul(1_000_000);
            }
            if let Some(v) = int("Server", "tpot_latency") {
                self.server_tpot_latency_ns = v.wrapping_mul(1_000_000);
            }
        }
        if let Some(v) = real("SingleStream", "target_latency_percentile") {
            self.single_stream_target_latency_percentile = v * 0.01;
        }
        if let Some(v) = real("MultiStream", "target_latency_percentile") {
            self.multi_stream_target_latency_percentile = v * 0.01;
        }
        if let Some(v) = int("MultiStream", "samples_per_query") {
            self.multi_stream_samples_per_query = v;
        }
        if let Some(v) = real("Server", "target_latency_percentile") {
            self.server_target_latency_percentile = v * 0.01;
        }
        if let Some(v) = int("Server", "target_latency") {
            self.server_target_latency_ns = v.wrapping_mul(1_000_000);
        }
        if let Some(v) = int(scenario, "sample_concatenate_permutation") {
            self.sample_concatenate_permutation = v == 1;
        }
        if let Some(v) = int("Server", "coalesce_queries") {
            self.server_coalesce_queries = v != 0;
        }
        if let Some(v) = int("Server", "max_async_queries") {
            self.server_max_async_queries = v;
        }
        for (key, field) in [
            ("min_duration", &mut self.min_duration_ms),
            ("max_duration", &mut self.max_duration_ms),
            ("min_query_count", &mut self.min_query_count),
            ("max_query_count", &mut self.max_query_count),
            ("performance_sample_count_override", &mut self.performance_sample_count_override),
        ] {
            if let Some(v) = conf.lookup(model, scenario, key).map(strtoull) {
                *field = v;
            }
        }
        if let Some(v) = real("SingleStream", "target_latency") {
            self.single_stream_expected_latency_ns = v * 1e6;
        }
        if let Some(v) = real("MultiStream", "target_latency") {
            self.multi_stream_expected_latency_ns = v * 1e6;
        }
        if let Some(v) = real("Server", "target_qps") {
            self.server_target_qps = v;
        }
        if let Some(v) = real("Offline", "target_qps") {
            self.offline_expected_qps = v;
        }
    }

    /// mlperf.conf then user.conf, as the first `FromConfig(user.conf, ...)` of a process does.
    pub fn from_files(mlperf_conf: &ConfFile, user_conf: &ConfFile, model: &str, scenario: &str) -> EffectiveSettings {
        let mut s = EffectiveSettings::default();
        s.apply(mlperf_conf, ConfKind::MlperfConf, model, scenario);
        s.apply(user_conf, ConfKind::UserConf, model, scenario);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_rules_match_loadgen() {
        let conf = ConfFile::parse("# comment\na.b.c=1\n*.Offline.target_qps = 0x10\nr.Server.target_latency = 15\n").unwrap();
        assert_eq!(conf.lookup("x", "Offline", "target_qps"), Some("0x10"));
        assert_eq!(conf.lookup("r", "Server", "target_latency"), Some("15"));
        assert_eq!(conf.lookup("a", "b", "c"), None, "`a.b.c=1` is one token and silently ignored");
        assert!(ConfFile::parse("k = 1 # trailing").is_err(), "a # in value position is a value");
        assert!(ConfFile::parse("k : 1").is_err());
        assert_eq!(ConfFile::parse("*.*.k = 1 2").unwrap().lookup("m", "s", "k"), Some("2"), "later values win");
    }

    #[test]
    fn numbers_follow_c() {
        assert_eq!(strtoull("010"), 8, "leading zero is octal");
        assert_eq!(strtoull("0x1F"), 31);
        assert_eq!(strtoull("0.6"), 0, "integer keys truncate");
        assert!(strtod_whole("1e-3") && strtod_whole("0x1p3") && !strtod_whole("1e"));
        assert_eq!(strtod("0x1p3"), 8.0);
    }

    #[test]
    fn lookup_order_and_units() {
        let mlperf = ConfFile::parse("*.*.qsl_rng_seed = 7\n*.Server.target_latency = 10\nresnet50.Server.target_latency = 15\n").unwrap();
        let user = ConfFile::parse("resnet50.*.qsl_rng_seed = 9\n*.Server.target_qps = 96\nresnet50.Server.target_qps = 104\n").unwrap();
        let s = EffectiveSettings::from_files(&mlperf, &user, "resnet50", "Server");
        assert_eq!(s.qsl_rng_seed, 7, "seeds come only from mlperf.conf");
        assert_eq!(s.server_target_latency_ns, 15_000_000);
        assert_eq!(s.server_target_qps, 104.0, "model.scenario beats *.scenario");
    }
}
