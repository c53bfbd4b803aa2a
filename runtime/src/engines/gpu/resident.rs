//! Samples kept in device memory (`start_from_device`), for the engines that read their inputs from
//! there (ResNet50's, YOLO's): each sample is uploaded the first time a batch needs it and read from
//! there afterwards, so a performance run's loaded set crosses PCIe once. When the pool is full (an
//! accuracy run streams every sample), a batch with a sample that is not resident is copied from the
//! host instead.

use super::GpuError;
use super::device::{DeviceBuffer, DevicePtr};
use crate::engines::{Sample, SampleSource};
use std::collections::HashMap;
use std::sync::Mutex;

pub struct ResidentPool {
    buffer: DeviceBuffer,
    capacity: usize,
    sample_bytes: usize,
    slots: Mutex<HashMap<usize, i32>>,
}

impl ResidentPool {
    /// Room for `capacity` samples of `sample_bytes` each.
    pub fn new(capacity: usize, sample_bytes: usize) -> Result<ResidentPool, GpuError> {
        Ok(ResidentPool { buffer: DeviceBuffer::new(capacity * sample_bytes)?, capacity, sample_bytes, slots: Mutex::new(HashMap::new()) })
    }

    /// The pool's slot numbers of samples `indices`, uploading those not resident yet; `None` when
    /// they do not all fit (the batch is then copied from the host).
    pub fn slots_for(&self, indices: &[usize], source: &dyn SampleSource) -> Result<Option<Vec<i32>>, GpuError> {
        let mut map = self.slots.lock().expect("resident pool");
        let missing = indices.iter().filter(|i| !map.contains_key(i)).count();
        if map.len() + missing > self.capacity {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(indices.len());
        for &i in indices {
            let next = map.len() as i32;
            let slot = match map.get(&i) {
                Some(&s) => s,
                None => {
                    let sample = sized_sample(source, i, self.sample_bytes)?;
                    self.buffer.upload(next as usize * self.sample_bytes, &sample[..]).map_err(|source| GpuError::SampleUpload { index: i, source })?;
                    map.insert(i, next);
                    next
                }
            };
            out.push(slot);
        }
        Ok(Some(out))
    }

    /// Where the pool's samples start: slot `s` is `s * sample_bytes` bytes in.
    pub fn ptr(&self) -> DevicePtr {
        self.buffer.ptr()
    }

    pub fn sample_bytes(&self) -> usize {
        self.sample_bytes
    }
}

/// Sample `index`, which must have the size the plan's input format gives.
pub fn sized_sample(source: &dyn SampleSource, index: usize, bytes: usize) -> Result<Sample, GpuError> {
    let sample = source.sample(index);
    if sample.len() != bytes {
        return Err(GpuError::Run(format!("sample {index} has {} bytes, the engine expects {bytes}", sample.len())));
    }
    Ok(sample)
}
