//! qwen3-vl-235b-a22b: product categorisation by a vision-language model served over an
//! OpenAI-compatible chat API (the reference: `multimodal/qwen3-vl/`, mlcommons/inference@b66003e1).
//!
//! - [`catalogue`]: the Shopify product catalogue's parquet files (48,289 products for Offline and
//!   Server, the 8,000-product set for Interactive), read one row at a time;
//! - [`request`]: each product's chat request exactly as the reference builds it, its image sent
//!   as stored (never re-encoded);
//! - [`accuracy`]: the reference's hierarchical category F1 and `accuracy.txt`;
//! - [`synthetic`]: generated products for development systems (never submittable).
//!
//! What goes back to LoadGen is the response text's UTF-8 bytes with the engine's
//! `usage.completion_tokens` as `n_tokens`; token latencies are off for this benchmark.

pub mod accuracy;
pub mod catalogue;
pub mod error;
pub mod request;
pub mod synthetic;

#[cfg(test)]
mod tests;

use super::{Benchmark, Drive, ServingWork, Workload, WorkloadSpec, no_engine, serving_options};
use crate::accuracy::Scored;
use crate::dataset::SampleSet;
use crate::dataset::qsl::SampleLibrary;
use crate::dataset::scratch::{DataReport, Item, ItemKind, Scratch};
use crate::engines::serving::api::{Chat, Output, Payload, Respond};
use crate::engines::serving::stand_in::{ReferenceAnswers, chat_key};
use crate::error::Error;
use catalogue::{Catalogue, Product, Truth};
use error::{Qwen3VlError, REMEDY};
use mlperf_config::{DatasetSource, EngineKind, Scenario, Settings};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub struct Qwen3Vl;

/// The catalog id.
const ID: &str = "qwen3-vl-235b-a22b";

/// What LoadGen gets (task.py): the answer text's UTF-8 bytes, with the engine's
/// `usage.completion_tokens` as `n_tokens`; the first report is the text so far.
const RESPOND: Respond = Respond { first: |out: &Output| out.text.as_bytes().to_vec(), complete: |out: &Output| (out.text.as_bytes().to_vec(), out.engine_count.unwrap_or(0)) };

/// Which published set a scenario reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProductSet {
    /// `Shopify/product-catalogue`, train+test: Offline and Server.
    Full,
    /// `nvidia/Shopify-product-catalogue-8k`: Interactive.
    Interactive,
}

impl ProductSet {
    pub fn of(scenario: Scenario) -> ProductSet {
        if scenario == Scenario::Interactive { ProductSet::Interactive } else { ProductSet::Full }
    }

    /// Where the set's parquet files go: `data/qwen3-vl-235b-a22b/<repository name>/`.
    pub fn dir(self, scratch: &Scratch) -> PathBuf {
        scratch.data_dir().join(ID).join(self.folder())
    }

    fn folder(self) -> &'static str {
        match self {
            ProductSet::Full => "product-catalogue",
            ProductSet::Interactive => "Shopify-product-catalogue-8k",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ProductSet::Full => "product catalogue (train+test)",
            ProductSet::Interactive => "Interactive 8k product set",
        }
    }

    /// Its files, checked to hold `expected` products (their ground truth only: no images read).
    fn checked(self, scratch: &Scratch, expected: usize) -> Result<(Catalogue, Vec<Truth>), Qwen3VlError> {
        let catalogue = Catalogue::find(&self.dir(scratch))?;
        let truths = catalogue.truths()?;
        if truths.len() != expected {
            return Err(Qwen3VlError::Count { dir: catalogue.dir.clone(), found: truths.len(), expected, set: self.name() });
        }
        Ok((catalogue, truths))
    }
}

fn is_synthetic(settings: &Settings) -> bool {
    settings.dataset == Some(DatasetSource::Synthetic)
}

impl Benchmark for Qwen3Vl {
    fn id(&self) -> &'static str {
        ID
    }

    fn data(&self, scratch: &Scratch, settings: &Settings) -> DataReport {
        let mut report = DataReport::new(scratch, ID, settings);
        if is_synthetic(settings) {
            report.notes.push("synthetic products are generated from their index; no catalogue file is read".into());
        } else {
            for set in [ProductSet::Full, ProductSet::Interactive] {
                let dir = set.dir(scratch);
                let mut item = Item::new(ItemKind::Dataset, set.name(), dir.clone(), format!("Put the parquet files in {}: {REMEDY}", dir.display()));
                item.present = Catalogue::find(&dir).is_ok();
                report.items.push(item);
            }
        }
        report.items.extend(DataReport::model_items(scratch, settings));
        report
    }

    fn open(&self, spec: &WorkloadSpec) -> Result<Workload, Error> {
        if spec.settings.engine != Some(EngineKind::Serving) {
            return Err(no_engine(ID, spec.settings));
        }
        let options = serving_options(spec.settings, ID, spec.output_limit)?;
        let synthetic = is_synthetic(spec.settings);
        let products = products(spec)?;
        let name = if synthetic { format!("synthetic {ID} products") } else { format!("{ID} {}", ProductSet::of(spec.plan.scenario).name()) };
        let system: Arc<str> = request::system_text().into();
        // Each product becomes its request at once (its image moved, not copied), so the
        // catalogue's images are held once.
        let chats: Arc<[Arc<Chat>]> = products.into_iter().map(|p| Arc::new(request::chat(&system, p))).collect();
        let library = SampleLibrary::generated(&name, chats.len(), spec.performance_samples, 0, |_| Vec::new());
        let work = ServingWork { options, request: Arc::new(move |i| Payload::Chat(chats[i].clone())), respond: RESPOND };
        Ok(Workload { drive: Drive::Serving(work), library: Arc::new(library), synthetic, caveats: Vec::new() })
    }

    /// The catalogue of the run's set, its ground truth counted (no image is read), before a serving
    /// engine loads its weights.
    fn preflight(&self, spec: &WorkloadSpec, _scored: bool) -> Result<(), Error> {
        if spec.settings.engine != Some(EngineKind::Serving) || is_synthetic(spec.settings) {
            return Ok(());
        }
        ProductSet::of(spec.plan.scenario).checked(&Scratch::from_env(), spec.total_samples)?;
        Ok(())
    }

    /// Generated products carry their ground truth (the stand-in answers it).
    fn scores_generated_data(&self) -> bool {
        true
    }

    fn score(&self, settings: &Settings, accuracy_log: &Path, _set: SampleSet) -> Result<Scored, Error> {
        let truths = if is_synthetic(settings) {
            synthetic::truths(synthetic_count(accuracy_log))
        } else {
            let set = ProductSet::of(scenario_of(accuracy_log));
            Catalogue::find(&set.dir(&Scratch::from_env()))?.truths()?
        };
        Ok(accuracy::score_log(accuracy_log, &truths)?.scored())
    }

    /// `dataset`: a directory of the catalogue's parquet files (either set).
    fn stand_in_answers(&self, dataset: &Path, _tokenizer: Option<&Path>) -> Result<ReferenceAnswers, Error> {
        Ok(ReferenceAnswers::texts(reference_answers(&Catalogue::find(dataset)?.products()?)))
    }
}

/// The scenario of the run whose accuracy log this is (its plan, next to it); Offline when the
/// plan cannot be read (a log scored outside a run directory reads the full catalogue).
fn scenario_of(accuracy_log: &Path) -> Scenario {
    accuracy_log.parent().and_then(|dir| crate::rundir::plan::read_plan(dir).ok()).map_or(Scenario::Offline, |plan| plan.scenario)
}

/// How many synthetic products a run's log refers to: its plan's sample count.
fn synthetic_count(accuracy_log: &Path) -> usize {
    accuracy_log.parent().and_then(|dir| crate::rundir::plan::read_plan(dir).ok()).map_or(0, |plan| plan.total_sample_count as usize)
}

/// The products of a run: generated, or the set of its scenario with their images.
fn products(spec: &WorkloadSpec) -> Result<Vec<Product>, Error> {
    if is_synthetic(spec.settings) {
        return Ok((0..spec.total_samples).map(synthetic::product).collect());
    }
    let set = ProductSet::of(spec.plan.scenario);
    let catalogue = Catalogue::find(&set.dir(&Scratch::from_env()))?;
    let products = catalogue.products()?;
    if products.len() != spec.total_samples {
        return Err(Qwen3VlError::Count { dir: catalogue.dir, found: products.len(), expected: spec.total_samples, set: set.name() }.into());
    }
    Ok(products)
}

/// What the stand-in answers each product's request with, so a run against it scores as a perfect
/// model would: the ground truth as a `ProductMetadata` JSON object, keyed by the request's user
/// text (the stand-in's chat key).
pub fn reference_answers(products: &[Product]) -> HashMap<String, String> {
    products.iter().map(|p| (chat_key(&[&request::user_text(p)]), truth_json(&p.truth))).collect()
}

/// `{"category": ..., "brand": ..., "is_secondhand": ...}`.
pub fn truth_json(truth: &Truth) -> String {
    serde_json::json!({ "category": truth.category, "brand": truth.brand, "is_secondhand": truth.is_secondhand }).to_string()
}
