//! Property tests of `extends` resolution: last writer wins along the merge order, provenance names
//! the section that wrote the value, and the order files are read in does not matter.

use mlperf_config::diag::{Sources, Span};
use mlperf_config::raw::{ConfigFile, RawValue, Section, Spanned};
use mlperf_config::resolve::{resolve_all, ConfigUnit};
use proptest::prelude::*;
use std::collections::BTreeMap;

const FIELDS: [&str; 3] = ["offline_expected_qps", "gpu_copy_streams", "min_query_count"];

/// A generated file: its parents (indices of earlier files, so the graph is acyclic) and values.
#[derive(Debug, Clone)]
struct GenFile {
    parents: Vec<usize>,
    values: Vec<(usize, i64)>,
}

fn files() -> impl Strategy<Value = Vec<GenFile>> {
    prop::collection::vec((prop::collection::vec(any::<prop::sample::Index>(), 0..3), prop::collection::vec((0..FIELDS.len(), 0i64..1000), 0..3)), 1..8)
        .prop_map(|raw| {
            raw.into_iter()
                .enumerate()
                .map(|(i, (parents, values))| GenFile { parents: if i == 0 { vec![] } else { parents.iter().map(|p| p.index(i)).collect() }, values })
                .collect()
        })
}

/// Builds units in `order`; every value's span encodes (file, position) so provenance can be checked.
fn units(graph: &[GenFile], order: &[usize]) -> (Vec<ConfigUnit>, Sources) {
    let mut sources = Sources::default();
    let units = order
        .iter()
        .map(|&i| {
            let file = sources.add(format!("configs/f{i}.toml"), String::new());
            let span = |k: usize| Span { file, start: k, end: k + 1 };
            let section = Section {
                name: Spanned { value: "default".into(), span: span(0) },
                extends: graph[i].parents.iter().map(|p| Spanned { value: format!("f{p}"), span: span(1) }).collect(),
                values: graph[i]
                    .values
                    .iter()
                    .enumerate()
                    .map(|(k, (f, v))| (Spanned { value: FIELDS[*f].into(), span: span(10 + k) }, Spanned { value: RawValue::Integer(*v as i128), span: span(100 + k) }))
                    .collect(),
            };
            ConfigUnit { name: format!("f{i}"), file: ConfigFile { file, sections: vec![section] } }
        })
        .collect();
    (units, sources)
}

/// Reference semantics, written directly: parents left to right, then own values in order.
fn expected(graph: &[GenFile], i: usize) -> BTreeMap<&'static str, (i64, usize)> {
    let mut out = BTreeMap::new();
    for &p in &graph[i].parents {
        out.extend(expected(graph, p));
    }
    for (f, v) in &graph[i].values {
        out.insert(FIELDS[*f], (*v, i));
    }
    out
}

/// Resolved effective values per file name: field -> (value, writing file).
fn effective(graph: &[GenFile], order: &[usize]) -> BTreeMap<String, BTreeMap<String, (i64, String)>> {
    let (units, sources) = units(graph, order);
    let resolved = resolve_all(&units).expect("acyclic graphs resolve");
    units
        .iter()
        .zip(resolved)
        .map(|(u, r)| {
            let fields = r[0]
                .fields
                .iter()
                .map(|(k, h)| {
                    let last = h.last().unwrap();
                    let RawValue::Integer(v) = last.value else { unreachable!() };
                    (k.clone(), (v as i64, sources.path(last.span.file).to_string()))
                })
                .collect();
            (u.name.clone(), fields)
        })
        .collect()
}

proptest! {
    #[test]
    fn last_writer_wins_with_provenance(graph in files()) {
        let order: Vec<usize> = (0..graph.len()).collect();
        let got = effective(&graph, &order);
        for i in 0..graph.len() {
            let want: BTreeMap<String, (i64, String)> = expected(&graph, i)
                .into_iter()
                .map(|(k, (v, f))| (k.to_string(), (v, format!("configs/f{f}.toml"))))
                .collect();
            prop_assert_eq!(&got[&format!("f{i}")], &want);
        }
    }

    #[test]
    fn file_order_does_not_matter(graph in files(), seed in any::<u64>()) {
        let forward: Vec<usize> = (0..graph.len()).collect();
        let mut shuffled = forward.clone();
        // Deterministic shuffle from the seed.
        let mut s = seed;
        for i in (1..shuffled.len()).rev() {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            shuffled.swap(i, (s >> 33) as usize % (i + 1));
        }
        prop_assert_eq!(effective(&graph, &forward), effective(&graph, &shuffled));
    }
}

#[test]
fn cycles_are_reported_not_followed() {
    let graph = [GenFile { parents: vec![1], values: vec![] }, GenFile { parents: vec![0], values: vec![] }];
    let (units, _) = units(&graph, &[0, 1]);
    let errors = resolve_all(&units).unwrap_err();
    assert!(errors.iter().all(|e| e.code == "C0501"), "{errors:?}");
}
