//! The COCO val2017 safe subset as the reference's scripts leave it (`filter_coco_safe_images.py`,
//! `create_safe_annotations.py`; MLCommons' `yolo-coco2017-filtered` download), in one directory:
//!
//! - `val2017_safe/<file_name>`: the images (JPEG);
//! - `annotations/instances_val2017.json`: the filtered annotations, whose `images` order is the
//!   QSL's order (`yolo_loadgen.py`'s `Coco`).
//!
//! The reference silently skips an image that is not there (its sample count drops); here the set
//! must hold the round's count and every image, checked before the engine starts, and an image
//! that cannot be decoded stops the run naming its file and sample. Images decode as
//! `cv2.imread` decodes them: JPEG ([`crate::dataset::image`]), and binary PPM, which OpenCV
//! reads too and the synthetic set writes.

use std::path::{Path, PathBuf};

use super::coco::{ImageInfo, Instances};
use super::error::YoloError;
use crate::dataset::image::{RgbImage, decode_jpeg};

/// The images' directory and the annotations, inside the set's directory.
pub const IMAGES_DIR: &str = "val2017_safe";
pub const ANNOTATIONS: &str = "annotations/instances_val2017.json";

/// A directory in the reference's layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CocoSet {
    pub dir: PathBuf,
}

impl CocoSet {
    pub fn in_dir(dir: &Path) -> CocoSet {
        CocoSet { dir: dir.to_path_buf() }
    }

    pub fn annotations(&self) -> PathBuf {
        self.dir.join(ANNOTATIONS)
    }

    pub fn images_dir(&self) -> PathBuf {
        self.dir.join(IMAGES_DIR)
    }

    pub fn image(&self, info: &ImageInfo) -> PathBuf {
        self.images_dir().join(&info.file_name)
    }

    /// The annotations, which must list `wanted` images, each of them present.
    pub fn read(&self, wanted: usize) -> Result<Instances, YoloError> {
        let instances = Instances::read(&self.annotations())?;
        if instances.images.len() != wanted {
            return Err(YoloError::ImageCount { path: self.annotations(), found: instances.images.len(), wanted });
        }
        if let Some((sample, info)) = instances.images.iter().enumerate().find(|(_, info)| !self.image(info).is_file()) {
            return Err(YoloError::MissingImage { path: self.image(info), sample });
        }
        Ok(instances)
    }
}

/// Image `sample` of the set, decoded as `cv2.imread` + `cvtColor(BGR2RGB)`.
pub fn read_image(path: &Path, sample: usize) -> Result<RgbImage, YoloError> {
    let bytes = std::fs::read(path).map_err(|source| YoloError::ReadImage { path: path.to_path_buf(), sample, source })?;
    if bytes.starts_with(b"P6") {
        return decode_ppm(&bytes).ok_or_else(|| YoloError::NotPpm { path: path.to_path_buf(), sample });
    }
    decode_jpeg(&bytes).map_err(|source| YoloError::Undecodable { path: path.to_path_buf(), sample, source })
}

/// A binary PPM (`P6 <w> <h> 255`, one whitespace, RGB bytes), as [`encode_ppm`] writes it.
fn decode_ppm(bytes: &[u8]) -> Option<RgbImage> {
    let mut fields = Vec::new();
    let mut at = 0;
    while fields.len() < 4 {
        while bytes.get(at)?.is_ascii_whitespace() {
            at += 1;
        }
        let start = at;
        while !bytes.get(at)?.is_ascii_whitespace() {
            at += 1;
        }
        fields.push(std::str::from_utf8(&bytes[start..at]).ok()?);
    }
    let [magic, w, h, max] = fields[..] else { return None };
    let (w, h): (usize, usize) = (w.parse().ok()?, h.parse().ok()?);
    let data = bytes.get(at + 1..)?;
    (magic == "P6" && max == "255" && w > 0 && h > 0 && data.len() == w * h * 3).then(|| RgbImage::new(w, h, data.to_vec()))
}

/// `image` as a binary PPM.
pub fn encode_ppm(image: &RgbImage) -> Vec<u8> {
    let mut out = format!("P6\n{} {}\n255\n", image.width, image.height).into_bytes();
    out.extend_from_slice(&image.data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ppm_round_trips_and_a_bad_one_is_named() {
        let image = RgbImage::new(2, 1, vec![1, 2, 3, 4, 5, 6]);
        let dir = std::env::temp_dir().join(format!("mlperf-yolo-ppm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.ppm");
        std::fs::write(&path, encode_ppm(&image)).unwrap();
        assert_eq!(read_image(&path, 0).unwrap(), image);
        std::fs::write(&path, b"P6\n2 1\n255\n123").unwrap();
        let e = read_image(&path, 7).unwrap_err().to_string();
        assert!(e.contains("a.ppm (sample 7): not a binary PPM"), "{e}");
        std::fs::write(&path, b"not an image").unwrap();
        let e = read_image(&path, 3).unwrap_err().to_string();
        assert!(e.contains("(sample 3): JPEG decoding failed"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn another_image_count_and_a_missing_image_are_data_errors_naming_the_file() {
        let dir = std::env::temp_dir().join(format!("mlperf-yolo-set-{}", std::process::id()));
        let set = CocoSet::in_dir(&dir);
        std::fs::create_dir_all(set.images_dir()).unwrap();
        std::fs::create_dir_all(set.annotations().parent().unwrap()).unwrap();
        let images = (1..=3).map(|id| ImageInfo { id, file_name: format!("{id:012}.jpg"), width: 4, height: 2 }).collect();
        Instances { images, annotations: Vec::new(), categories: Vec::new() }.write(&set.annotations()).unwrap();
        for id in [1, 3] {
            std::fs::write(set.images_dir().join(format!("{id:012}.jpg")), b"").unwrap();
        }
        let e = crate::Error::from(set.read(1525).unwrap_err());
        assert_eq!(e.exit_code(), crate::error::exit::DATA);
        assert!(e.to_string().contains("instances_val2017.json lists 3 images; the round's COCO safe subset has 1525"), "{e}");
        let e = set.read(3).unwrap_err().to_string();
        assert!(e.contains("val2017_safe/000000000002.jpg (sample 1) is missing"), "{e}");
        std::fs::write(set.images_dir().join("000000000002.jpg"), b"").unwrap();
        assert_eq!(set.read(3).unwrap().images.len(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
