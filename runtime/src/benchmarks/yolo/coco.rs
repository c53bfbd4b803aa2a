//! COCO instance annotations as the reference's `create_safe_annotations.py` writes the filtered
//! `instances_val2017.json`: images, box annotations and categories. Fields the evaluation does
//! not read (segmentations, licenses, supercategories) are ignored when reading and not written.

use crate::accuracy::AccuracyError;
use crate::fsutil::FsError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The annotation file: its images in order (the QSL's order), their boxes and the categories.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instances {
    pub images: Vec<ImageInfo>,
    pub annotations: Vec<Annotation>,
    pub categories: Vec<Category>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageInfo {
    pub id: u64,
    pub file_name: String,
    pub width: u32,
    pub height: u32,
}

/// One ground-truth box; `bbox` is `[x, y, width, height]` in pixels, `area` the segment's area
/// (which sets the box's area range, not `w * h`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Annotation {
    pub id: u64,
    pub image_id: u64,
    pub category_id: u32,
    pub bbox: [f64; 4],
    pub area: f64,
    pub iscrowd: u8,
}

/// A COCO-91 category id and its name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Category {
    pub id: u32,
    pub name: String,
}

/// Why annotations or an accuracy log of detections cannot be read or scored; all but a file
/// that cannot be written are [`crate::Error::Data`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CocoError {
    #[error("cannot read COCO annotations {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// serde's message carries the line and column.
    #[error("{} is not a COCO instances file ({source}); use the instances_val2017.json that the reference's create_safe_annotations.py writes", path.display())]
    Parse { path: PathBuf, source: serde_json::Error },
    #[error("cannot serialise COCO annotations for {}: {source}", path.display())]
    Serialise { path: PathBuf, source: serde_json::Error },
    #[error(transparent)]
    Write(#[from] FsError),
    /// The accuracy log cannot be read, or one of its entries cannot be scored (the variants
    /// below, inside it with the entry named).
    #[error(transparent)]
    Log(#[from] AccuracyError),
    #[error("{} has no entries: score the log of a complete accuracy run", path.display())]
    EmptyLog { path: PathBuf },
    #[error("sample {qsl_idx} is past the annotations' {images} images: was the run made on another dataset?")]
    PastImages { qsl_idx: usize, images: usize },
    #[error("sample {qsl_idx}: {bytes} bytes are not float32 values: the SUT logs 7 float32 per detection")]
    NotFloat32 { qsl_idx: usize, bytes: usize },
    #[error("sample {qsl_idx}: {values} float32 values are not whole detections of 7 [qsl_idx, ymin, xmin, ymax, xmax, score, class]")]
    PartialDetection { qsl_idx: usize, values: usize },
    #[error("sample {qsl_idx}, detection {detection}: the {what} is {value}, not a number")]
    NotANumber { qsl_idx: usize, detection: usize, what: &'static str, value: f32 },
}

impl From<CocoError> for crate::Error {
    /// Unreadable annotations or logs are the run's data; a file that cannot be written is not.
    fn from(e: CocoError) -> crate::Error {
        match e {
            CocoError::Write(e) => e.into(),
            CocoError::Log(e) => e.into(),
            CocoError::Serialise { .. } => crate::Error::Other(e.to_string()),
            _ => crate::Error::Data(e.to_string()),
        }
    }
}

impl Instances {
    pub fn read(path: &Path) -> Result<Instances, CocoError> {
        let bytes = std::fs::read(path).map_err(|source| CocoError::Read { path: path.to_path_buf(), source })?;
        serde_json::from_slice(&bytes).map_err(|source| CocoError::Parse { path: path.to_path_buf(), source })
    }

    /// Writes the file through a temporary and a rename, so a reader never sees half of it.
    pub fn write(&self, path: &Path) -> Result<(), CocoError> {
        let json = serde_json::to_vec(self).map_err(|source| CocoError::Serialise { path: path.to_path_buf(), source })?;
        Ok(crate::fsutil::write_atomic(path, &json)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::exit;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mlperf-coco-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn reads_what_the_reference_writes_ignoring_extra_fields_and_round_trips() {
        let dir = scratch("round-trip");
        let path = dir.join("instances_val2017.json");
        let text = r#"{"info": {"year": 2017}, "licenses": [],
            "images": [{"id": 139, "file_name": "000000000139.jpg", "width": 640, "height": 426, "license": 2, "coco_url": "x"}],
            "annotations": [{"id": 7, "image_id": 139, "category_id": 64, "bbox": [236.98, 142.51, 24.7, 69.5], "area": 531.8, "iscrowd": 0, "segmentation": [[1, 2, 3]]}],
            "categories": [{"id": 64, "name": "potted plant", "supercategory": "furniture"}]}"#;
        std::fs::write(&path, text).unwrap();
        let read = Instances::read(&path).unwrap();
        assert_eq!(read.images[0].height, 426);
        assert_eq!(read.annotations[0].bbox, [236.98, 142.51, 24.7, 69.5]);
        assert_eq!(read.categories[0].name, "potted plant");
        let again = dir.join("sub/copy.json");
        read.write(&again).unwrap();
        assert_eq!(Instances::read(&again).unwrap(), read);
    }

    #[test]
    fn long_numbers_read_as_python_reads_them() {
        // 17 significant digits: serde_json's default parser lands an ulp off here; Python's json
        // (and `float_roundtrip`) give the float32 the SUT logged.
        let dir = scratch("digits");
        let path = dir.join("instances.json");
        let text = r#"{"images": [], "annotations": [{"id": 1, "image_id": 2, "category_id": 3, "bbox": [204.57333374023438, 0, 1, 202.93650817871094], "area": 1, "iscrowd": 0}], "categories": []}"#;
        std::fs::write(&path, text).unwrap();
        let bbox = Instances::read(&path).unwrap().annotations[0].bbox;
        assert_eq!((bbox[0], bbox[3]), (f64::from(204.57333f32), f64::from(202.93651f32)));
    }

    #[test]
    fn a_broken_file_names_itself_and_the_line_and_is_a_data_error() {
        let dir = scratch("broken");
        let path = dir.join("bad.json");
        std::fs::write(&path, "{\"images\": [],\n \"annotations\": [{\"id\": 1}]}").unwrap();
        let e = Instances::read(&path).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("bad.json") && text.contains("line 2") && text.contains("create_safe_annotations.py"), "{text}");
        assert_eq!(crate::Error::from(e).exit_code(), exit::DATA);
        let missing = Instances::read(&dir.join("none.json")).unwrap_err();
        assert!(missing.to_string().contains("none.json"), "{missing}");
    }
}
