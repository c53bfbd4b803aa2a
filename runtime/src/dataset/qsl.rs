//! The query sample library: LoadGen's view of the dataset ([`mlperf_loadgen::Qsl`]) and the
//! engines' view of loaded samples ([`SampleSource`]), over preprocessed data.
//!
//! Three storages, one contract:
//!
//! - **Per-sample files** ([`SampleLibrary::npy_dir`]): `<dir>/<name>.npy` for each val-map name,
//!   in val-map order (NVIDIA's ResNet50 layout). `load_samples` reads exactly the requested files;
//!   `unload_samples` drops them.
//! - **Contiguous tensors** ([`SampleLibrary::contiguous`]): one `[N, ...]` `.npy` (or several with
//!   the same `N`, like BERT's `input_ids`/`segment_ids`/`input_mask`) read once, on the first load.
//!   A single file is served as ranges of its one buffer without copies; several files are
//!   interleaved once into one buffer (sample `i` = row `i` of each file, in order) so that a sample
//!   is still one range. Loading marks samples valid, unloading invalidates them; the buffer stays
//!   for the library's lifetime (LoadGen's accuracy mode loads and unloads set after set, and
//!   rereading a large tensor each time would cost far more than keeping it).
//! - **Generated** ([`SampleLibrary::generated`]): bytes made from the index on load (synthetic data).
//!
//! [`SampleSource::sample`] of a sample that is not loaded panics: an engine reading outside the
//! loaded set is a harness bug that would otherwise surface as silent wrong answers.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use mlperf_loadgen::Qsl;

use super::DataError;
use super::npy::{NpyDtype, NpyError, NpyFile, read_npy, read_npy_header};
use super::val_map::{read_val_map, sample_file_name};
use crate::engines::{Sample, SampleSource};

/// Why a QSL cannot be opened or a sample loaded: the library, the file and what is wrong. Every
/// kind is [`crate::Error::Data`] (the preprocessed data is missing, corrupt or stale).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QslError {
    #[error("QSL {name}: no samples")]
    NoSamples { name: String },
    #[error("QSL {name}: {missing} of {total} sample files missing in {} (first: {first})", dir.display())]
    SampleFilesMissing { name: String, missing: usize, total: usize, dir: PathBuf, first: String },
    #[error("QSL {name}: no tensor files")]
    NoTensorFiles { name: String },
    #[error("{}: a 0-d array has no samples", path.display())]
    ZeroDimensional { path: PathBuf },
    #[error("{}: {count} samples, but {} has {first_count}", path.display(), first.display())]
    SampleCountsDiffer { path: PathBuf, count: usize, first: PathBuf, first_count: usize },
    #[error("QSL {name}: {} holds no samples", path.display())]
    Empty { name: String, path: PathBuf },
    #[error("QSL {name}: {} is a directory of samples but no val map names them", dir.display())]
    NoValMap { name: String, dir: PathBuf },
    #[error("QSL {name}: {} does not exist", path.display())]
    Missing { name: String, path: PathBuf },
    #[error("{} changed since the QSL was opened", path.display())]
    Changed { path: PathBuf },
    #[error("{}: {shape:?} of {}, but the QSL's samples are {expected_shape:?} of {}", path.display(), dtype.numpy_name(), expected_dtype.numpy_name())]
    SampleMismatch { path: PathBuf, shape: Vec<usize>, dtype: NpyDtype, expected_shape: Vec<usize>, expected_dtype: NpyDtype },
    #[error(transparent)]
    Npy(#[from] NpyError),
    #[error(transparent)]
    Data(#[from] DataError),
    /// A benchmark's own reader ([`SampleLibrary::read_by`]) failed; its message says why.
    #[error("{0}")]
    Reader(ReadError),
}

impl From<QslError> for crate::Error {
    fn from(e: QslError) -> crate::Error {
        crate::Error::Data(e.to_string())
    }
}

/// One input tensor within a sample's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    /// File stem (`input_ids`) or `input` for per-sample and generated data.
    pub name: String,
    pub dtype: Option<NpyDtype>,
    /// Shape of one sample's tensor (without the batch dimension); empty when unknown.
    pub shape: Vec<usize>,
    /// Byte offset and length within the sample.
    pub offset: usize,
    pub bytes: usize,
}

type Generator = Box<dyn Fn(usize) -> Vec<u8> + Send + Sync>;
/// Reads sample `i` from a format of its benchmark's own (3D-UNet's case pickles).
type Reader = Box<dyn Fn(usize) -> Result<Sample, ReadError> + Send + Sync>;
/// A family's reader's own error (its typed enum), carried in [`QslError::Reader`].
pub type ReadError = Box<dyn std::error::Error + Send + Sync>;
/// A contiguous library's data once read: the buffer, the first sample's offset, the sample stride.
type Contiguous = (Arc<[u8]>, usize, usize);

enum Storage {
    /// Every sample's file must hold `dtype` and `shape`.
    Files {
        dir: PathBuf,
        names: Vec<String>,
        dtype: NpyDtype,
        shape: Vec<usize>,
    },
    Contiguous {
        paths: Vec<PathBuf>,
        buffer: Mutex<Option<Contiguous>>,
    },
    Generated(Generator),
    Read(Reader),
}

/// A QSL and sample source over preprocessed data. See the module documentation.
pub struct SampleLibrary {
    name: String,
    total: usize,
    performance: usize,
    storage: Storage,
    inputs: Vec<TensorInfo>,
    slots: RwLock<Vec<Option<Sample>>>,
    loaded: AtomicUsize,
}

impl std::fmt::Debug for SampleLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SampleLibrary").field("name", &self.name).field("total", &self.total).field("loaded", &self.loaded_count()).finish()
    }
}

impl SampleLibrary {
    fn with(name: &str, total: usize, performance: usize, storage: Storage, inputs: Vec<TensorInfo>) -> SampleLibrary {
        SampleLibrary { name: name.to_string(), total, performance: performance.min(total), storage, inputs, slots: RwLock::new(vec![None; total]), loaded: AtomicUsize::new(0) }
    }

    /// Per-sample `.npy` files in `dir` named after the val map's entries (`<name>.npy`, or the
    /// name itself when it ends in `.npy`). Every file must exist; the first one's header fixes the
    /// dtype and shape every sample must have.
    pub fn npy_dir(name: &str, dir: &Path, val_map: &Path, performance: usize) -> Result<SampleLibrary, QslError> {
        let names: Vec<String> = read_val_map(val_map)?.into_iter().map(|e| sample_file_name(&e.name)).collect();
        SampleLibrary::npy_files(name, dir, names, performance)
    }

    /// [`SampleLibrary::npy_dir`] with the file names given.
    pub fn npy_files(name: &str, dir: &Path, names: Vec<String>, performance: usize) -> Result<SampleLibrary, QslError> {
        if names.is_empty() {
            return Err(QslError::NoSamples { name: name.to_string() });
        }
        let missing: Vec<&String> = names.iter().filter(|n| !dir.join(n).is_file()).collect();
        if let Some(first) = missing.first() {
            return Err(QslError::SampleFilesMissing { name: name.to_string(), missing: missing.len(), total: names.len(), dir: dir.to_path_buf(), first: first.to_string() });
        }
        let header = read_npy_header(&dir.join(&names[0]))?;
        let input = TensorInfo { name: "input".into(), dtype: Some(header.dtype), shape: header.shape.clone(), offset: 0, bytes: header.data_len() };
        let total = names.len();
        let storage = Storage::Files { dir: dir.to_path_buf(), names, dtype: header.dtype, shape: header.shape };
        Ok(SampleLibrary::with(name, total, performance, storage, vec![input]))
    }

    /// `total` samples of element type `dtype` and shapes of their own (3D-UNet's volumes), each
    /// read by `read` when LoadGen loads it.
    pub fn read_by(name: &str, total: usize, performance: usize, dtype: NpyDtype, read: impl Fn(usize) -> Result<Sample, ReadError> + Send + Sync + 'static) -> SampleLibrary {
        let input = TensorInfo { name: "input".into(), dtype: Some(dtype), shape: Vec::new(), offset: 0, bytes: 0 };
        SampleLibrary::with(name, total, performance, Storage::Read(Box::new(read)), vec![input])
    }

    /// One or more `[N, ...]` tensors (same `N`); sample `i` is row `i` of each, concatenated. Only
    /// the headers are read here; the data on the first load.
    pub fn contiguous(name: &str, paths: &[PathBuf], performance: usize) -> Result<SampleLibrary, QslError> {
        if paths.is_empty() {
            return Err(QslError::NoTensorFiles { name: name.to_string() });
        }
        let mut inputs = Vec::new();
        let mut total = None;
        let mut offset = 0;
        for path in paths {
            let h = read_npy_header(path)?;
            let (&n, row_shape) = h.shape.split_first().ok_or_else(|| QslError::ZeroDimensional { path: path.clone() })?;
            if let Some(first_count) = total.filter(|&t| t != n) {
                return Err(QslError::SampleCountsDiffer { path: path.clone(), count: n, first: paths[0].clone(), first_count });
            }
            total = Some(n);
            let bytes = row_shape.iter().product::<usize>() * h.dtype.size();
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("input").to_string();
            inputs.push(TensorInfo { name: stem, dtype: Some(h.dtype), shape: row_shape.to_vec(), offset, bytes });
            offset += bytes;
        }
        let total = total.unwrap();
        if total == 0 {
            return Err(QslError::Empty { name: name.to_string(), path: paths[0].clone() });
        }
        let storage = Storage::Contiguous { paths: paths.to_vec(), buffer: Mutex::new(None) };
        Ok(SampleLibrary::with(name, total, performance, storage, inputs))
    }

    /// The QSL for a resolved `tensor_path` (comma-separated, as NVIDIA writes BERT's three files):
    /// `.npy` files are contiguous tensors; a directory holds per-sample files named by `val_map`.
    pub fn open(name: &str, tensor_paths: &[PathBuf], val_map: Option<&Path>, performance: usize) -> Result<SampleLibrary, QslError> {
        match tensor_paths {
            [dir] if dir.is_dir() => {
                let map = val_map.ok_or_else(|| QslError::NoValMap { name: name.to_string(), dir: dir.clone() })?;
                SampleLibrary::npy_dir(name, dir, map, performance)
            }
            paths => {
                if let Some(p) = paths.iter().find(|p| !p.is_file()) {
                    return Err(QslError::Missing { name: name.to_string(), path: p.clone() });
                }
                SampleLibrary::contiguous(name, paths, performance)
            }
        }
    }

    /// Samples generated from their index on load (synthetic data); `sample_bytes` documents the
    /// size (0 if it varies).
    pub fn generated(name: &str, total: usize, performance: usize, sample_bytes: usize, generate: impl Fn(usize) -> Vec<u8> + Send + Sync + 'static) -> SampleLibrary {
        let input = TensorInfo { name: "input".into(), dtype: None, shape: Vec::new(), offset: 0, bytes: sample_bytes };
        SampleLibrary::with(name, total, performance, Storage::Generated(Box::new(generate)), vec![input])
    }

    /// The tensors in each sample's bytes.
    pub fn inputs(&self) -> &[TensorInfo] {
        &self.inputs
    }

    /// Samples loaded right now.
    pub fn loaded_count(&self) -> usize {
        self.loaded.load(Ordering::Relaxed)
    }

    /// Whether sample `index` is loaded.
    pub fn is_loaded(&self, index: usize) -> bool {
        self.slots.read().unwrap().get(index).is_some_and(Option::is_some)
    }

    /// Reads the contiguous tensors once (interleaving several files into one buffer).
    fn contiguous_buffer(&self, paths: &[PathBuf], cell: &Mutex<Option<Contiguous>>) -> Result<Contiguous, QslError> {
        let mut guard = cell.lock().unwrap();
        if let Some(b) = guard.as_ref() {
            return Ok(b.clone());
        }
        let files: Vec<NpyFile> = paths.iter().map(|p| read_npy(p)).collect::<Result<_, _>>()?;
        for (file, (info, path)) in files.iter().zip(self.inputs.iter().zip(paths)) {
            // The file may have changed since the header was read at construction.
            if file.header.dtype != info.dtype.unwrap() || file.header.shape.first() != Some(&self.total) || file.header.data_len() != self.total * info.bytes {
                return Err(QslError::Changed { path: path.clone() });
            }
        }
        let built = if files.len() == 1 {
            let f = files.into_iter().next().unwrap();
            let start = f.header.data_offset;
            (f.bytes, start, self.inputs[0].bytes)
        } else {
            let stride: usize = self.inputs.iter().map(|i| i.bytes).sum();
            let mut buf = Vec::with_capacity(stride * self.total);
            for i in 0..self.total {
                for (f, info) in files.iter().zip(&self.inputs) {
                    buf.extend_from_slice(&f.data()[i * info.bytes..(i + 1) * info.bytes]);
                }
            }
            (Arc::from(buf), 0, stride)
        };
        *guard = Some(built.clone());
        Ok(built)
    }

    /// Makes one sample's bytes.
    fn fetch(&self, index: usize) -> Result<Sample, QslError> {
        match &self.storage {
            Storage::Files { dir, names, dtype, shape } => {
                let path = dir.join(&names[index]);
                let f = read_npy(&path)?;
                if f.header.dtype != *dtype || &f.header.shape != shape {
                    return Err(QslError::SampleMismatch { path, shape: f.header.shape.clone(), dtype: f.header.dtype, expected_shape: shape.clone(), expected_dtype: *dtype });
                }
                let range = f.data_range();
                Ok(Sample::new(f.bytes, range))
            }
            Storage::Contiguous { paths, buffer } => {
                let (buf, start, stride) = self.contiguous_buffer(paths, buffer)?;
                Ok(Sample::new(buf, start + index * stride..start + (index + 1) * stride))
            }
            Storage::Generated(generate) => Ok(Sample::whole(Arc::from(generate(index)))),
            Storage::Read(read) => read(index).map_err(QslError::Reader),
        }
    }
}

impl Qsl for SampleLibrary {
    fn name(&self) -> &str {
        &self.name
    }

    fn total_sample_count(&self) -> usize {
        self.total
    }

    fn performance_sample_count(&self) -> usize {
        self.performance
    }

    /// Loads exactly `indices` into host memory (files in parallel). A sample that cannot be read
    /// aborts the run with a panic naming it: LoadGen offers no way to report the failure, and the
    /// test cannot continue without the sample.
    fn load_samples(&self, indices: &[usize]) {
        if let Some(&bad) = indices.iter().find(|&&i| i >= self.total) {
            panic!("QSL {}: LoadGen asked to load sample {bad} of {}", self.name, self.total);
        }
        let threads = match self.storage {
            Storage::Files { .. } if indices.len() >= 64 => std::thread::available_parallelism().map_or(2, |n| n.get()).min(8),
            _ => 1,
        };
        let chunk = indices.len().div_ceil(threads.max(1)).max(1);
        let fetched: Vec<Vec<(usize, Sample)>> = std::thread::scope(|s| {
            let handles: Vec<_> = indices
                .chunks(chunk)
                .map(|part| {
                    s.spawn(move || part.iter().map(|&i| (i, self.fetch(i).unwrap_or_else(|e| panic!("QSL {}: cannot load sample {i}: {e}", self.name)))).collect::<Vec<_>>())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
        });
        let mut slots = self.slots.write().unwrap();
        for (i, sample) in fetched.into_iter().flatten() {
            if slots[i].replace(sample).is_none() {
                self.loaded.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn unload_samples(&self, indices: &[usize]) {
        let mut slots = self.slots.write().unwrap();
        for &i in indices {
            if slots.get_mut(i).and_then(Option::take).is_some() {
                self.loaded.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

impl SampleSource for SampleLibrary {
    fn sample(&self, index: usize) -> Sample {
        match self.slots.read().unwrap().get(index) {
            Some(Some(sample)) => sample.clone(),
            _ => panic!(
                "QSL {}: sample {index} is not loaded ({} of {} samples are): an engine read a sample LoadGen did not load (harness bug)",
                self.name,
                self.loaded_count(),
                self.total
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::npy::write_npy;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("mlperf-qsl-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Sample i of a per-sample set: 6 int8 values i*10 .. i*10+5, shape [2, 3].
    fn per_sample_set(d: &Path, n: usize) -> PathBuf {
        let mut map = String::new();
        for i in 0..n {
            let name = format!("ILSVRC2012_val_{:08}.JPEG", i + 1);
            let data: Vec<u8> = (0..6).map(|k| (i * 10 + k) as u8).collect();
            write_npy(&d.join(format!("{name}.npy")), NpyDtype::I8, &[2, 3], &data).unwrap();
            map.push_str(&format!("{name} {i}\n"));
        }
        std::fs::write(d.join("val_map.txt"), map).unwrap();
        d.join("val_map.txt")
    }

    #[test]
    fn per_sample_files_load_exactly_what_is_asked() {
        let d = dir("files");
        let map = per_sample_set(&d, 5);
        let q = SampleLibrary::npy_dir("imagenet", &d, &map, 3).unwrap();
        assert_eq!((q.name(), q.total_sample_count(), q.performance_sample_count()), ("imagenet", 5, 3));
        assert_eq!(q.inputs()[0].shape, vec![2, 3]);
        q.load_samples(&[4, 1]);
        assert_eq!(q.loaded_count(), 2);
        assert!(q.is_loaded(4) && q.is_loaded(1) && !q.is_loaded(0));
        assert_eq!(&*q.sample(4), &[40, 41, 42, 43, 44, 45]);
        assert_eq!(&*q.sample(1), &[10, 11, 12, 13, 14, 15]);
        // Loading again is idempotent; unloading frees.
        q.load_samples(&[1]);
        assert_eq!(q.loaded_count(), 2);
        q.unload_samples(&[1, 4, 3]);
        assert_eq!(q.loaded_count(), 0);
        // Many samples load in parallel.
        let big = dir("files-big");
        let map = per_sample_set(&big, 100);
        let q = SampleLibrary::npy_dir("imagenet", &big, &map, 100).unwrap();
        q.load_samples(&(0..100).collect::<Vec<_>>());
        assert_eq!(q.loaded_count(), 100);
        assert_eq!(q.sample(77)[0], (770 % 256) as u8);
    }

    #[test]
    #[should_panic(expected = "sample 2 is not loaded (1 of 5 samples are)")]
    fn reading_an_unloaded_sample_is_a_harness_bug() {
        let d = dir("unloaded");
        let map = per_sample_set(&d, 5);
        let q = SampleLibrary::npy_dir("imagenet", &d, &map, 5).unwrap();
        q.load_samples(&[0]);
        q.sample(2);
    }

    #[test]
    fn missing_and_inconsistent_files_are_named() {
        let d = dir("missing");
        let map = per_sample_set(&d, 3);
        std::fs::remove_file(d.join("ILSVRC2012_val_00000002.JPEG.npy")).unwrap();
        let e = SampleLibrary::npy_dir("imagenet", &d, &map, 3).unwrap_err().to_string();
        assert!(e.contains("1 of 3 sample files missing") && e.contains("ILSVRC2012_val_00000002.JPEG.npy"), "{e}");
        write_npy(&d.join("ILSVRC2012_val_00000002.JPEG.npy"), NpyDtype::I8, &[6], &[0; 6]).unwrap();
        let q = SampleLibrary::npy_dir("imagenet", &d, &map, 3).unwrap();
        let e = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| q.load_samples(&[1]))).unwrap_err();
        let msg = e.downcast_ref::<String>().unwrap();
        assert!(msg.contains("cannot load sample 1") && msg.contains("[6] of int8, but the QSL's samples are [2, 3] of int8"), "{msg}");
    }

    #[test]
    fn contiguous_samples_share_one_buffer() {
        let d = dir("contig");
        let data: Vec<u8> = (0..4 * 8).flat_map(|v: i32| v.to_le_bytes()).collect();
        write_npy(&d.join("all.npy"), NpyDtype::I32, &[4, 8], &data).unwrap();
        let q = SampleLibrary::open("bert", &[d.join("all.npy")], None, 4).unwrap();
        assert_eq!(q.inputs()[0], TensorInfo { name: "all".into(), dtype: Some(NpyDtype::I32), shape: vec![8], offset: 0, bytes: 32 });
        q.load_samples(&[2, 0]);
        let (a, b) = (q.sample(2), q.sample(0));
        assert_eq!(&*a, &data[64..96]);
        // Zero copy: both samples point into the same allocation, 2 rows apart.
        assert_eq!(a.as_ptr() as usize - b.as_ptr() as usize, 64);
        let again = q.sample(2);
        assert_eq!(again.as_ptr(), a.as_ptr());
        q.unload_samples(&[2]);
        assert_eq!(q.loaded_count(), 1);
        q.load_samples(&[2]);
        assert_eq!(q.sample(2).as_ptr(), a.as_ptr(), "the buffer is read once");
    }

    #[test]
    fn several_tensors_interleave_per_sample() {
        let d = dir("multi");
        let ids: Vec<u8> = (0..3 * 4).flat_map(|v: i32| (100 + v).to_le_bytes()).collect();
        let seg: Vec<u8> = (0..3 * 4).flat_map(|v: i32| (200 + v).to_le_bytes()).collect();
        write_npy(&d.join("input_ids.npy"), NpyDtype::I32, &[3, 4], &ids).unwrap();
        write_npy(&d.join("segment_ids.npy"), NpyDtype::I32, &[3, 4], &seg).unwrap();
        let q = SampleLibrary::open("bert", &[d.join("input_ids.npy"), d.join("segment_ids.npy")], None, 3).unwrap();
        assert_eq!(q.inputs().iter().map(|i| (i.name.as_str(), i.offset, i.bytes)).collect::<Vec<_>>(), vec![("input_ids", 0, 16), ("segment_ids", 16, 16)]);
        q.load_samples(&[1]);
        let s = q.sample(1);
        let vals: Vec<i32> = s.chunks(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(vals, vec![104, 105, 106, 107, 204, 205, 206, 207]);
        write_npy(&d.join("short.npy"), NpyDtype::I32, &[2, 4], &ids[..32]).unwrap();
        let e = SampleLibrary::open("bert", &[d.join("input_ids.npy"), d.join("short.npy")], None, 3).unwrap_err().to_string();
        assert!(e.contains("2 samples, but"), "{e}");
        assert!(SampleLibrary::open("bert", &[d.join("absent.npy")], None, 3).unwrap_err().to_string().contains("does not exist"));
        assert!(SampleLibrary::open("imagenet", std::slice::from_ref(&d), None, 3).unwrap_err().to_string().contains("no val map"));
    }

    #[test]
    fn generated_samples_come_from_the_index() {
        let q = SampleLibrary::generated("synthetic", 10, 4, 3, |i| vec![i as u8; 3]);
        assert_eq!(q.performance_sample_count(), 4);
        q.load_samples(&[7, 8]);
        assert_eq!(&*q.sample(7), &[7, 7, 7]);
        q.unload_samples(&[7, 8, 9]);
        assert_eq!(q.loaded_count(), 0);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| q.load_samples(&[10])));
        assert!(r.unwrap_err().downcast_ref::<String>().unwrap().contains("sample 10 of 10"));
    }
}
