//! The reference's preprocessed KiTS19 layout (`preprocess.py` of mlcommons/inference's
//! `vision/medical_imaging/3d-unet-kits19`), read for real runs and written by the synthetic set,
//! so that both take one path. In one directory (the reference's `--results_dir`):
//!
//! - `preprocessed_files.pkl`: a dict of `file_list`, the case names in sample order, and `cases`,
//!   each case's dict with its `image_shape`, `(1, D, H, W)` (the reference also keeps affine
//!   matrices there, which only its NIfTI export reads);
//! - `<case>.pkl` for each case: `[image, label]`, the normalised CT volume as float32
//!   `[1, D, H, W]` and its segmentation as uint8 of the same shape. `accuracy_kits.py` reads that
//!   same segmentation back from `nifti/<case>/segmentation.nii.gz` as its ground truth, so the
//!   scorer here reads it from the pickle.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::INFERENCE_CASES;
use super::error::UNetError;
use crate::benchmarks::unet3d::cpu::VolumeShape;
use crate::dataset::npy::NpyDtype;
use crate::dataset::numpy_pickle::{Pickled, PickledArray, to_pickle};
use crate::dataset::pickle::{Value, parse};

/// The index file of the layout.
pub const INDEX: &str = "preprocessed_files.pkl";

/// One case of the index, in sample order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    pub name: String,
    /// `[D, H, W]` of its `[1, D, H, W]` volume.
    pub shape: VolumeShape,
}

/// One case's arrays: the image's float32 bytes and one label per voxel.
pub struct CaseData {
    pub image: Rc<[u8]>,
    pub labels: Rc<[u8]>,
}

/// A directory in the reference's preprocessed layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preprocessed {
    pub dir: PathBuf,
}

impl Preprocessed {
    pub fn in_dir(dir: &Path) -> Preprocessed {
        Preprocessed { dir: dir.to_path_buf() }
    }

    pub fn index(&self) -> PathBuf {
        self.dir.join(INDEX)
    }

    pub fn case_file(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.pkl"))
    }

    /// The cases of the index, which must be the round's inference set in its order.
    pub fn read_index(&self) -> Result<Vec<Case>, UNetError> {
        let path = self.index();
        let fail = |problem: String| UNetError::Index { path: path.clone(), problem };
        let root = read_pickle(&path).map_err(|e| UNetError::IndexUnreadable { source: Box::new(e) })?;
        let names: Vec<String> = root
            .get("file_list")
            .and_then(|l| l.items())
            .ok_or_else(|| fail(format!("a {} without a file_list", root.kind())))?
            .iter()
            .map(|n| n.as_str().map(str::to_string).ok_or_else(|| fail(format!("a {} in file_list", n.kind()))))
            .collect::<Result<_, _>>()?;
        if let Some(i) = (0..names.len().max(INFERENCE_CASES.len())).find(|&i| names.get(i).map(String::as_str) != INFERENCE_CASES.get(i).copied()) {
            return Err(fail(format!(
                "file_list has {} cases and sample {i} is {}, but the round's inference set (meta/inference_cases.json) has {} and sample {i} is {}",
                names.len(),
                names.get(i).map_or("missing", String::as_str),
                INFERENCE_CASES.len(),
                INFERENCE_CASES.get(i).copied().unwrap_or("missing")
            )));
        }
        let cases = root.get("cases").ok_or_else(|| fail("no cases dict".into()))?;
        names
            .into_iter()
            .map(|name| {
                let shape = cases.get(&name).and_then(|c| c.get("image_shape")).and_then(|s| s.items()).ok_or_else(|| fail(format!("no image_shape for {name}")))?;
                match shape.iter().map(Value::as_usize).collect::<Option<Vec<usize>>>().as_deref() {
                    Some(&[1, d, h, w]) if d * h * w > 0 => Ok(Case { name, shape: [d, h, w] }),
                    _ => Err(fail(format!("{name}'s image_shape is not (1, D, H, W)"))),
                }
            })
            .collect()
    }

    /// Case `case`'s image (float32 bytes) and labels (uint8), checked against its index entry.
    pub fn read_case(&self, case: &Case) -> Result<CaseData, UNetError> {
        let path = self.case_file(&case.name);
        let items = read_pickle(&path)?.items().unwrap_or_default();
        let [image, label] = items.as_slice() else { return Err(UNetError::NotAPair { path }) };
        let wanted = [1, case.shape[0], case.shape[1], case.shape[2]];
        let array = |value: &Value, what: &'static str, dtype: NpyDtype| -> Result<Rc<[u8]>, UNetError> {
            let unreadable = |source| UNetError::Array { path: path.clone(), what, source };
            let array = PickledArray::read(value).map_err(unreadable)?;
            if array.shape != wanted {
                return Err(UNetError::ArrayShape { path: path.clone(), what, found: array.shape, index: INDEX, wanted });
            }
            array.bytes_of(dtype).map_err(unreadable)
        };
        Ok(CaseData { image: array(image, "image", NpyDtype::F32)?, labels: array(label, "label", NpyDtype::U8)? })
    }

    /// Writes one case's pickle (`image`: float32 bytes, `labels`: one per voxel).
    pub fn write_case(&self, case: &Case, image: &[u8], labels: &[u8]) -> Result<(), UNetError> {
        let shape = [1, case.shape[0], case.shape[1], case.shape[2]];
        let pair = Pickled::List(vec![Pickled::Array { dtype: NpyDtype::F32, shape: &shape, data: image }, Pickled::Array { dtype: NpyDtype::U8, shape: &shape, data: labels }]);
        Ok(crate::fsutil::write_atomic(&self.case_file(&case.name), &to_pickle(&pair))?)
    }

    /// Writes the index of `cases`.
    pub fn write_index(&self, cases: &[Case]) -> Result<(), UNetError> {
        fn aux(c: &Case) -> Pickled<'_> {
            let shape = std::iter::once(1).chain(c.shape).map(|d| Pickled::Int(d as i64)).collect();
            Pickled::Dict(vec![("case", Pickled::Str(&c.name)), ("image_shape", Pickled::Tuple(shape))])
        }
        let index = Pickled::Dict(vec![
            ("file_list", Pickled::List(cases.iter().map(|c| Pickled::Str(&c.name)).collect())),
            ("cases", Pickled::Dict(cases.iter().map(|c| (c.name.as_str(), aux(c))).collect())),
        ]);
        Ok(crate::fsutil::write_atomic(&self.index(), &to_pickle(&index))?)
    }
}

fn read_pickle(path: &Path) -> Result<Value, UNetError> {
    let bytes = std::fs::read(path).map_err(|source| UNetError::Read { path: path.to_path_buf(), source })?;
    parse(&bytes).map_err(|source| UNetError::Pickle { path: path.to_path_buf(), source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benchmarks::unet3d::error::REMEDY;

    fn cases() -> Vec<Case> {
        INFERENCE_CASES.iter().enumerate().map(|(i, name)| Case { name: name.to_string(), shape: [2, 1 + i % 2, 3] }).collect()
    }

    fn scratch(name: &str) -> Preprocessed {
        let dir = std::env::temp_dir().join(format!("mlperf-kits-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Preprocessed::in_dir(&dir)
    }

    #[test]
    fn a_written_set_reads_back_case_by_case() {
        let set = scratch("round-trip");
        let cases = cases();
        set.write_index(&cases).unwrap();
        let case = &cases[1];
        let voxels = case.shape.iter().product::<usize>();
        let image: Vec<u8> = (0..voxels).flat_map(|v| (v as f32 * 0.5).to_le_bytes()).collect();
        let labels: Vec<u8> = (0..voxels).map(|v| (v % 3) as u8).collect();
        set.write_case(case, &image, &labels).unwrap();
        assert_eq!(set.read_index().unwrap(), cases);
        let back = set.read_case(case).unwrap();
        assert_eq!((&back.image[..], &back.labels[..]), (&image[..], &labels[..]));

        let err = set.read_case(&cases[0]).err().unwrap().to_string();
        assert!(err.starts_with("cannot read ") && err.contains("case_00000.pkl"), "{err}");
        set.write_case(&Case { shape: case.shape, ..cases[0].clone() }, &image, &labels).unwrap();
        let err = set.read_case(&cases[0]).err().unwrap().to_string();
        assert!(err.ends_with("case_00000.pkl: the image has shape [1, 2, 2, 3], but preprocessed_files.pkl gives [1, 2, 1, 3]"), "{err}");
        std::fs::remove_dir_all(&set.dir).unwrap();
    }

    #[test]
    fn an_index_of_other_cases_says_which_sample_differs() {
        let set = scratch("other-cases");
        let mut cases = cases();
        cases.swap(3, 4);
        set.write_index(&cases).unwrap();
        let err = set.read_index().err().unwrap().to_string();
        assert!(
            err.contains("file_list has 43 cases and sample 3 is case_00012, but the round's inference set (meta/inference_cases.json) has 43 and sample 3 is case_00006"),
            "{err}"
        );
        assert!(err.ends_with(&format!("; {REMEDY}")), "{err}");
        std::fs::remove_file(set.index()).unwrap();
        let err = set.read_index().err().unwrap().to_string();
        assert!(err.starts_with("cannot read ") && err.contains("preprocessed_files.pkl: ") && err.ends_with(REMEDY), "{err}");
        set.write_index(&cases[..42]).unwrap();
        let err = set.read_index().err().unwrap().to_string();
        assert!(err.contains("file_list has 42 cases and sample 3 is case_00012"), "{err}");
        std::fs::remove_dir_all(&set.dir).unwrap();
    }

    /// Opt-in (needs python3 with numpy): what this module writes loads in Python as the reference's
    /// own files do, arrays of the right dtype, shape and values.
    #[test]
    #[ignore = "needs python3 with numpy"]
    fn python_and_numpy_read_what_is_written() {
        let set = scratch("python-reads");
        let cases = cases();
        set.write_index(&cases).unwrap();
        let image: Vec<u8> = (0..12).flat_map(|v| (v as f32 * 0.25 - 1.0).to_le_bytes()).collect();
        let labels: Vec<u8> = (0..12).map(|v| (v % 3) as u8).collect();
        set.write_case(&cases[1], &image, &labels).unwrap();
        let script = "import pickle, sys, numpy as np
index = pickle.load(open(sys.argv[1] + '/preprocessed_files.pkl', 'rb'))
assert len(index['file_list']) == 43 and index['cases']['case_00003']['image_shape'] == (1, 2, 2, 3), index
image, label = pickle.load(open(sys.argv[1] + '/case_00003.pkl', 'rb'))
assert image.dtype == np.float32 and label.dtype == np.uint8 and image.shape == label.shape == (1, 2, 2, 3)
assert (image.ravel() == np.arange(12, dtype=np.float32) * 0.25 - 1.0).all() and (label.ravel() == np.arange(12) % 3).all()
print('ok')";
        let out = std::process::Command::new("python3").args(["-c", script]).arg(&set.dir).output().expect("python3 runs");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n", "{}", String::from_utf8_lossy(&out.stderr));
        std::fs::remove_dir_all(&set.dir).unwrap();
    }

    /// The pickles Python and numpy write (protocol 4 with frames and memo, numpy 2's names), as
    /// the reference's preprocess.py leaves them, affine matrices in the index included:
    /// `testdata/make.py` made them (Python 3.11, numpy 2.4).
    #[test]
    fn pickles_written_by_python_and_numpy_read() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/benchmarks/unet3d/testdata");
        let set = Preprocessed::in_dir(&dir);
        let cases = set.read_index().unwrap();
        assert_eq!(cases.len(), 43);
        assert!(cases.iter().all(|c| c.shape == [2, 2, 3]), "{cases:?}");
        let CaseData { image, labels } = set.read_case(&cases[0]).unwrap();
        let image: Vec<f32> = image.chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
        assert_eq!(image, (0..12).map(|v| v as f32 * 0.25 - 1.0).collect::<Vec<_>>());
        assert_eq!(&labels[..], &[0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]);
    }
}
