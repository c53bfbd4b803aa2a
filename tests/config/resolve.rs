//! Property tests of `extends` resolution: the highest-precedence writer wins (Python's C3 method
//! resolution order, re-implemented here as the reference), provenance names the section that
//! wrote the value, and the order files are read in does not matter.

use mlperf_config::diag::{Sources, Span};
use mlperf_config::raw::{ConfigFile, RawValue, Section, Spanned};
use mlperf_config::resolve::{ConfigUnit, resolve_all};
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
    prop::collection::vec((prop::collection::vec(any::<prop::sample::Index>(), 0..3), prop::collection::vec((0..FIELDS.len(), 0i64..1000), 0..3)), 1..8).prop_map(|raw| {
        raw.into_iter().enumerate().map(|(i, (parents, values))| GenFile { parents: if i == 0 { vec![] } else { parents.iter().map(|p| p.index(i)).collect() }, values }).collect()
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

/// Reference: Python's C3 linearization of file `i` (itself first), or None when inconsistent.
fn mro(graph: &[GenFile], i: usize) -> Option<Vec<usize>> {
    let mut lists: Vec<Vec<usize>> = Vec::new();
    for &p in &graph[i].parents {
        lists.push(mro(graph, p)?);
    }
    lists.push(graph[i].parents.clone());
    let mut out = vec![i];
    loop {
        lists.retain(|l| !l.is_empty());
        if lists.is_empty() {
            return Some(out);
        }
        let head = lists.iter().map(|l| l[0]).find(|h| lists.iter().all(|l| !l[1..].contains(h)))?;
        out.push(head);
        for l in &mut lists {
            if l[0] == head {
                l.remove(0);
            }
        }
    }
}

/// Reference semantics: the first file in the MRO that sets a field wins; within a file, the last
/// value written.
fn expected(graph: &[GenFile], i: usize) -> Option<BTreeMap<&'static str, (i64, usize)>> {
    let mut out = BTreeMap::new();
    for f in mro(graph, i)?.into_iter().rev() {
        for (field, v) in &graph[f].values {
            out.insert(FIELDS[*field], (*v, f));
        }
    }
    Some(out)
}

/// Field -> (value, the file that wrote it).
type Effective = BTreeMap<String, (i64, String)>;

/// Resolved effective values per file name.
fn effective(graph: &[GenFile], order: &[usize]) -> Option<BTreeMap<String, Effective>> {
    let (units, sources) = units(graph, order);
    let resolved = resolve_all(&units).ok()?;
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
        .collect::<BTreeMap<_, _>>()
        .into()
}

proptest! {
    #[test]
    fn last_writer_wins_with_provenance(graph in files()) {
        let order: Vec<usize> = (0..graph.len()).collect();
        let got = effective(&graph, &order);
        let consistent = (0..graph.len()).all(|i| mro(&graph, i).is_some());
        // Inconsistent orders are rejected (C0503), exactly when the reference finds no MRO.
        prop_assert_eq!(got.is_some(), consistent);
        if let Some(got) = got {
            for i in 0..graph.len() {
                let want: BTreeMap<String, (i64, String)> = expected(&graph, i)
                    .unwrap()
                    .into_iter()
                    .map(|(k, (v, f))| (k.to_string(), (v, format!("configs/f{f}.toml"))))
                    .collect();
                prop_assert_eq!(&got[&format!("f{i}")], &want);
            }
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
fn shared_ancestors_never_override_their_descendants() {
    // f0 = defaults, f1 = scenario defaults overriding f0, f2 = a flag file on f0, f3 extends [f1, f2].
    let graph = [
        GenFile { parents: vec![], values: vec![(0, 1)] },
        GenFile { parents: vec![0], values: vec![(0, 2)] },
        GenFile { parents: vec![0], values: vec![(1, 7)] },
        GenFile { parents: vec![1, 2], values: vec![] },
    ];
    let got = effective(&graph, &[0, 1, 2, 3]).unwrap();
    assert_eq!(got["f3"]["offline_expected_qps"], (2, "configs/f1.toml".to_string()));
    assert_eq!(got["f3"]["gpu_copy_streams"], (7, "configs/f2.toml".to_string()));
}

#[test]
fn cycles_are_reported_not_followed() {
    let graph = [GenFile { parents: vec![1], values: vec![] }, GenFile { parents: vec![0], values: vec![] }];
    let (units, _) = units(&graph, &[0, 1]);
    let errors = resolve_all(&units).unwrap_err();
    assert!(errors.iter().all(|e| e.code == "C0501"), "{errors:?}");
}
