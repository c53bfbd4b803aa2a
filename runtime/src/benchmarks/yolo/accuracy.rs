//! YOLO's accuracy: `vision/classification_and_detection/tools/accuracy-coco.py` (mlcommons/inference
//! b66003e1) as the reference runs it for yolo-99 and yolo-95 (no `--use-inv-map`: the SUT logs
//! COCO-91 ids; no `--remove-48-empty-images`: the QSL is the annotations' image order):
//!
//! - each entry's `qsl_idx` names the image by its position in the annotations' `images`; a
//!   `qsl_idx` logged again is skipped (the script keeps the first);
//! - `data` is float32s, 7 per detection: `[qsl_idx, ymin, xmin, ymax, xmax, score, class]` with
//!   the corners as fractions of the image's height and width; fewer than 7 values is an image
//!   without detections (still evaluated: its boxes are missed);
//! - the corners are scaled by the annotation's height and width and the box made `[xmin, ymin,
//!   xmax - xmin, ymax - ymin]` in float32 as numpy does it, then widened; the class is
//!   `int(class)`;
//! - a payload index that is not the entry's `qsl_idx` prints an `ERROR: ...` line per detection
//!   and the detection still counts under the entry's image;
//! - COCOeval (bbox) over the logged images ([`evaluate_images`]), its summary, then
//!   `mAP=<100 * AP@[.5:.95], 3 decimals>%`, the line the checker's `mAP` pattern reads.
//!
//! `accuracy.txt` holds what the script prints except pycocotools' progress and timing lines.
//! Where the script would crash we return clear errors naming the sample (an index past the
//! images, bytes that are not float32, a partial detection, an index or class that is not a
//! number); a log whose images have no detection at all (the script fails in `loadRes`) scores
//! 0 as COCOeval does for no detections.

use super::coco::{CocoError, Instances};
use super::coco_eval::{Detection, Stats, evaluate_images};
use crate::accuracy::Scored;
use crate::accuracy::log::for_each_entry;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;

/// Values per logged detection.
const VALUES: usize = 7;

/// An accuracy log decoded as accuracy-coco.py decodes it.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedDetections {
    /// In log order (the order of the script's results file).
    pub detections: Vec<Detection>,
    /// Every logged image (with or without detections): the evaluation's `imgIds`.
    pub image_ids: Vec<u64>,
    /// The script's `ERROR: loadgen(..) and payload(..) disagree on image_idx` lines.
    pub mismatches: Vec<String>,
    /// Entries in the log, repeats included.
    pub entries: usize,
    /// Images logged without a detection.
    pub no_results: usize,
}

/// Decodes `accuracy_log` against the annotations' image order.
pub fn read_detections(accuracy_log: &Path, instances: &Instances) -> Result<LoggedDetections, CocoError> {
    let mut seen = HashSet::new();
    let mut out = LoggedDetections { detections: Vec::new(), image_ids: Vec::new(), mismatches: Vec::new(), entries: 0, no_results: 0 };
    out.entries = for_each_entry(accuracy_log, &mut |entry| {
        let qsl_idx = entry.qsl_idx;
        if !seen.insert(qsl_idx) {
            return Ok(());
        }
        let image = instances.images.get(qsl_idx).ok_or(CocoError::PastImages { qsl_idx, images: instances.images.len() })?;
        out.image_ids.push(image.id);
        if !entry.data.len().is_multiple_of(4) {
            return Err(CocoError::NotFloat32 { qsl_idx, bytes: entry.data.len() }.into());
        }
        let values: Vec<f32> = entry.data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        if values.len() < VALUES {
            out.no_results += 1;
            return Ok(());
        }
        if !values.len().is_multiple_of(VALUES) {
            return Err(CocoError::PartialDetection { qsl_idx, values: values.len() }.into());
        }
        let (height, width) = (image.height as f32, image.width as f32);
        for (n, v) in values.chunks_exact(VALUES).enumerate() {
            let whole = |value: f32, what: &'static str| {
                if value.is_finite() { Ok(value.trunc() as i64) } else { Err(CocoError::NotANumber { qsl_idx, detection: n, what, value }) }
            };
            let claimed = whole(v[0], "image index")?;
            if claimed != qsl_idx as i64 {
                out.mismatches.push(format!("ERROR: loadgen({qsl_idx}) and payload({claimed}) disagree on image_idx"));
            }
            let class = whole(v[6], "class")?;
            // A class no category can have is not evaluated, as pycocotools skips it.
            let Ok(category_id) = u32::try_from(class) else { continue };
            let (ymin, xmin, ymax, xmax) = (v[1] * height, v[2] * width, v[3] * height, v[4] * width);
            let bbox = [xmin, ymin, xmax - xmin, ymax - ymin].map(f64::from);
            out.detections.push(Detection { image_id: image.id, category_id, bbox, score: f64::from(v[5]) });
        }
        Ok(())
    })?;
    if out.entries == 0 {
        return Err(CocoError::EmptyLog { path: accuracy_log.to_path_buf() });
    }
    Ok(out)
}

/// A scored log: COCOeval's stats and the lines the script prints.
#[derive(Debug, Clone, PartialEq)]
pub struct CocoScore {
    pub stats: Stats,
    pub logged: LoggedDetections,
}

impl CocoScore {
    /// `mAP=21.231%`: AP@[.5:.95] in percent.
    pub fn map_line(&self) -> String {
        format!("mAP={:.3}%", 100.0 * self.stats.stats[0])
    }

    /// What the script prints, without pycocotools' progress and timing lines: the mismatch
    /// errors, `COCOeval.summarize()`'s twelve lines, the mAP line.
    pub fn accuracy_txt(&self) -> String {
        let mut text = String::new();
        for line in &self.logged.mismatches {
            let _ = writeln!(text, "{line}");
        }
        for (stat, (ap, iou, area, max_dets)) in self.stats.stats.iter().zip(SUMMARY) {
            let (title, kind) = if ap { ("Average Precision", "(AP)") } else { ("Average Recall", "(AR)") };
            let _ = writeln!(text, " {title:<18} {kind} @[ IoU={iou:<9} | area={area:>6} | maxDets={max_dets:>3} ] = {stat:.3}");
        }
        let _ = writeln!(text, "{}", self.map_line());
        text
    }

    /// The text and the `mAP` metric as the checker's pattern reads it back (three decimals).
    pub fn scored(&self) -> Scored {
        let printed = format!("{:.3}", 100.0 * self.stats.stats[0]).parse().unwrap_or(f64::NAN);
        Scored { text: self.accuracy_txt(), metrics: vec![("mAP".to_string(), printed)] }
    }
}

/// `summarize()`'s lines in the order of the stats: AP or AR, IoU, area, maxDets.
const SUMMARY: [(bool, &str, &str, usize); 12] = [
    (true, "0.50:0.95", "all", 100),
    (true, "0.50", "all", 100),
    (true, "0.75", "all", 100),
    (true, "0.50:0.95", "small", 100),
    (true, "0.50:0.95", "medium", 100),
    (true, "0.50:0.95", "large", 100),
    (false, "0.50:0.95", "all", 1),
    (false, "0.50:0.95", "all", 10),
    (false, "0.50:0.95", "all", 100),
    (false, "0.50:0.95", "small", 100),
    (false, "0.50:0.95", "medium", 100),
    (false, "0.50:0.95", "large", 100),
];

/// Decodes and scores `accuracy_log` as accuracy-coco.py does.
pub fn score_log(accuracy_log: &Path, instances: &Instances) -> Result<CocoScore, CocoError> {
    let logged = read_detections(accuracy_log, instances)?;
    let stats = evaluate_images(instances, &logged.detections, &logged.image_ids);
    Ok(CocoScore { stats, logged })
}

/// [`score_log`] as the harness records it: `accuracy.txt`'s text and the `mAP` metric.
pub fn score_coco(accuracy_log: &Path, instances: &Instances) -> Result<Scored, CocoError> {
    Ok(score_log(accuracy_log, instances)?.scored())
}

#[cfg(test)]
#[path = "accuracy_tests.rs"]
mod tests;
