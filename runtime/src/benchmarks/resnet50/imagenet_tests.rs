//! Tests of the ImageNet preprocessing. The JPEGs in `testdata/` were written by Python PIL
//! (quality 100); the pixel values they are checked against are what `cv2.imread` +
//! `cvtColor(BGR2RGB)` returns for them (opencv-python 5.0), so decoding is checked against the
//! reference decoder, and every preprocessed value is then known by hand.

use super::*;
use crate::dataset::npy::read_npy;
use crate::dataset::val_map::parse_val_map;

const UNIFORM: &[u8] = include_bytes!("testdata/uniform_200_100_50_320x240.jpg");
const GRAY: &[u8] = include_bytes!("testdata/gray_77_200x300.jpg");
const ORIENT6: &[u8] = include_bytes!("testdata/orient6_32x16.jpg");
const CMYK: &[u8] = include_bytes!("testdata/cmyk_64x48.jpg");

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mlperf-imagenet-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn opts(dtype: DataType, layout: ImageLayout) -> ImagenetOptions {
    ImagenetOptions { dtype, layout, threads: 2, ..ImagenetOptions::default() }
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

#[test]
fn decodes_like_cv2_imread() {
    let u = decode_jpeg(UNIFORM).unwrap();
    assert_eq!((u.width, u.height), (320, 240));
    assert!(u.data.chunks(3).all(|p| p == [200, 100, 50]));
    // Grayscale is replicated into three channels.
    let g = decode_jpeg(GRAY).unwrap();
    assert_eq!((g.width, g.height), (200, 300));
    assert!(g.data.iter().all(|&v| v == 77));
    // Adobe CMYK (PIL writes C=10 M=60 Y=120 K=30, inverted): OpenCV's conversion gives (217, 173, 120).
    let c = decode_jpeg(CMYK).unwrap();
    assert_eq!((c.width, c.height), (64, 48));
    assert!(c.data.chunks(3).all(|p| p == [217, 173, 120]), "{:?}", c.pixel(0, 0));
    // Stored 32x16 (left half red, right half blue) with EXIF orientation 6: shown rotated 90
    // degrees clockwise, 16x32, red on top. cv2.imread gives (254, 0, 0) and (0, 0, 254).
    let o = decode_jpeg(ORIENT6).unwrap();
    assert_eq!((o.width, o.height), (16, 32));
    assert_eq!(o.pixel(0, 0), [254, 0, 0]);
    assert_eq!(o.pixel(15, 0), [254, 0, 0]);
    assert_eq!(o.pixel(0, 31), [0, 0, 254]);
    assert_eq!(o.pixel(15, 31), [0, 0, 254]);
    assert!(decode_jpeg(b"not a jpeg").unwrap_err().to_string().contains("JPEG decoding failed"));
}

#[test]
fn uniform_image_gives_known_values_in_every_format() {
    // 320x240 -> resized to 341x256 -> cropped to 224x224; every pixel stays (200, 100, 50).
    // int8: trunc(200 - 123.68 = 76.32) = 76, trunc(100 - 116.78 = -16.78) = -16,
    // trunc(50 - 103.94 = -53.94) = -53 (truncation toward zero, not rounding).
    let plane = 224 * 224;
    let t = preprocess_jpeg(UNIFORM, &opts(DataType::Int8, ImageLayout::Linear)).unwrap();
    assert_eq!(t.len(), 3 * plane);
    assert!(t[..plane].iter().all(|&v| v as i8 == 76));
    assert!(t[plane..2 * plane].iter().all(|&v| v as i8 == -16));
    assert!(t[2 * plane..].iter().all(|&v| v as i8 == -53));
    // HWC interleaves the channels; chw4 adds a zero fourth channel.
    let hwc = preprocess_jpeg(UNIFORM, &opts(DataType::Int8, ImageLayout::Hwc)).unwrap();
    assert!(hwc.chunks(3).all(|p| p == [76, (-16i8) as u8, (-53i8) as u8]));
    let chw4 = preprocess_jpeg(UNIFORM, &opts(DataType::Int8, ImageLayout::Chw4)).unwrap();
    assert_eq!(chw4.len(), 4 * plane);
    assert!(chw4.chunks(4).all(|p| p == [76, (-16i8) as u8, (-53i8) as u8, 0]));
    // fp32: the f32 differences themselves; fp16: those rounded to half precision.
    let f = f32s(&preprocess_jpeg(UNIFORM, &opts(DataType::Fp32, ImageLayout::Linear)).unwrap());
    assert_eq!(f.len(), 3 * plane);
    assert!(f[..plane].iter().all(|&v| v == 200.0f32 - 123.68f32));
    assert!(f[plane..2 * plane].iter().all(|&v| v == 100.0f32 - 116.78f32));
    assert!(f[2 * plane..].iter().all(|&v| v == 50.0f32 - 103.94f32));
    assert!((f[0] - 76.32).abs() < 1e-4);
    let h = preprocess_jpeg(UNIFORM, &opts(DataType::Fp16, ImageLayout::Linear)).unwrap();
    let h0 = half::f16::from_le_bytes([h[0], h[1]]);
    assert_eq!(h0.to_f32(), 76.3125, "76.32 rounded to the nearest half (step 1/16 at 64..128)");
    // Grayscale 77: trunc(-46.68) = -46, trunc(-39.78) = -39, trunc(-26.94) = -26.
    let g = preprocess_jpeg(GRAY, &opts(DataType::Int8, ImageLayout::Linear)).unwrap();
    assert_eq!([g[0] as i8, g[plane] as i8, g[2 * plane] as i8], [-46, -39, -26]);
}

#[test]
fn int8_clamps_then_truncates() {
    // Black: 0 - 123.68 = -123.68 -> -123 (no clamp needed); white: 255 - 103.94 = 151.06 -> 127.
    let img = RgbImage::new(2, 1, vec![0, 0, 0, 255, 255, 255]);
    let t = to_tensor(&img, ImageLayout::Hwc, DataType::Int8);
    assert_eq!(t.iter().map(|&v| v as i8).collect::<Vec<_>>(), vec![-123, -116, -103, 127, 127, 127]);
}

#[test]
fn resize_dims_follow_resize_with_aspectratio() {
    assert_eq!(resize_dims(500, 375, 224), (341, 256)); // int(256 * 500 / 375) = int(341.33)
    assert_eq!(resize_dims(375, 500, 224), (256, 341));
    assert_eq!(resize_dims(500, 333, 224), (384, 256)); // int(384.38)
    assert_eq!(resize_dims(300, 300, 224), (256, 256));
    assert_eq!(resize_dims(150, 200, 224), (256, 341));
    assert_eq!(resize_dims(64, 64, 64), (73, 73)); // int(100 * 64 / 87.5) = int(73.14)
}

#[test]
fn crop_takes_the_center_with_truncated_offsets() {
    // A 301x256 image needs no resize (short side 256, long side int(256 * 301 / 256) = 301); the
    // crop starts at left = int(77 / 2) = 38, top = int(32 / 2) = 16. Pixels encode their position.
    let (w, h) = (301usize, 256usize);
    let data = (0..h).flat_map(|y| (0..w).flat_map(move |x| [(x % 256) as u8, y as u8, ((x + 2 * y) % 256) as u8])).collect();
    let img = RgbImage::new(w, h, data);
    let resized = resize_with_aspect_ratio(&img, 224);
    assert_eq!(resized, img);
    let c = center_crop(&resized, 224, 224);
    assert_eq!((c.width, c.height), (224, 224));
    assert_eq!(c.pixel(0, 0), img.pixel(38, 16));
    assert_eq!(c.pixel(223, 223), img.pixel(261, 239));
    // CHW: channel planes; element (c, y, x) at c*224*224 + y*224 + x.
    let t = to_tensor(&c, ImageLayout::Linear, DataType::Fp32);
    let f = f32s(&t);
    let at = |ch: usize, y: usize, x: usize| f[ch * 224 * 224 + y * 224 + x];
    assert_eq!(at(0, 5, 7), (38 + 7) as f32 - MEANS[0]);
    assert_eq!(at(1, 5, 7), (16 + 5) as f32 - MEANS[1]);
    assert_eq!(at(2, 5, 7), (38 + 7 + 2 * (16 + 5)) as f32 - MEANS[2]); // (x + 2y) % 256 = 87
}

#[test]
fn downscale_geometry_on_a_synthetic_image() {
    // 512x512 made of 2x2 blocks of one value: the exact 2x shrink to 256x256 keeps every block's
    // value, and the centre crop of the square starts at (16, 16).
    let (w, h) = (512usize, 512usize);
    let data = (0..h).flat_map(|y| (0..w).flat_map(move |x| [((x / 2) % 256) as u8, ((y / 2) % 256) as u8, 9])).collect();
    let img = RgbImage::new(w, h, data);
    let r = resize_with_aspect_ratio(&img, 224);
    assert_eq!((r.width, r.height), (256, 256));
    assert_eq!(r.pixel(100, 200), [100, 200, 9]);
    let c = center_crop(&r, 224, 224);
    assert_eq!(c.pixel(0, 0), [16, 16, 9]);
    assert_eq!(c.pixel(223, 10), [239, 26, 9]);
}

#[test]
fn exif_orientation_parsing() {
    // Big-endian TIFF, IFD0 at 8 with one entry: orientation (0x0112) SHORT 1 value 8.
    let mut tiff = b"MM\0*\0\0\0\x08\0\x01".to_vec();
    tiff.extend_from_slice(&[0x01, 0x12, 0x00, 0x03, 0, 0, 0, 1, 0x00, 0x08, 0, 0]);
    assert_eq!(exif_orientation(&tiff), Some(8));
    assert_eq!(exif_orientation(b"II*\0\x08\0\0\0\0\0"), None);
    assert_eq!(exif_orientation(b"junk"), None);
    // 8 = rotate 90 counter-clockwise to display: the top-left pixel ends bottom-left.
    let img = RgbImage::new(2, 1, vec![1, 1, 1, 2, 2, 2]);
    let r = apply_orientation(img.clone(), 8);
    assert_eq!((r.width, r.height), (1, 2));
    assert_eq!((r.pixel(0, 0), r.pixel(0, 1)), ([2, 2, 2], [1, 1, 1]));
    assert_eq!(apply_orientation(img.clone(), 2).pixel(0, 0), [2, 2, 2]);
    assert_eq!(apply_orientation(img.clone(), 1), img);
}

#[test]
fn val_map_parsing() {
    let m = parse_val_map("a.JPEG 65\nb.JPEG\t970\n\n").unwrap();
    assert_eq!(m, vec![ValMapEntry { name: "a.JPEG".into(), label: Some(65) }, ValMapEntry { name: "b.JPEG".into(), label: Some(970) }]);
    assert_eq!(parse_val_map("c.JPEG\n").unwrap()[0].label, None);
    assert!(parse_val_map("a 1\n\nb 2\n").unwrap_err().to_string().starts_with("2: blank line"));
    assert!(parse_val_map("a x\n").unwrap_err().to_string().contains("'x' is not an integer"));
}

#[test]
fn from_settings_reads_the_config() {
    let s = Settings {
        input_dtype: Some(DataType::Int8),
        input_format: Some(InputFormat::Chw4),
        image_size: Some(64),
        tensor_path: Some("imagenet/ResNet50/all.npy".into()),
        ..Settings::default()
    };
    let o = ImagenetOptions::from_settings(&s).unwrap();
    assert_eq!((o.layout, o.image_size, o.output.clone()), (ImageLayout::Chw4, 64, OutputMode::Contiguous("all.npy".into())));
    assert_eq!(o.format_name(), "int8_chw4");
    let bad = Settings { input_dtype: Some(DataType::Fp32), input_format: Some(InputFormat::Chw4), ..Settings::default() };
    assert!(ImagenetOptions::from_settings(&bad).unwrap_err().to_string().contains("only for int8"));
    let int32 = Settings { input_dtype: Some(DataType::Int32), ..Settings::default() };
    assert!(ImagenetOptions::from_settings(&int32).is_err());
}

#[test]
fn preprocess_directory_per_sample_and_contiguous() {
    let root = tmpdir("e2e");
    let src = root.join("imagenet");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("ILSVRC2012_val_00000001.JPEG"), UNIFORM).unwrap();
    std::fs::write(src.join("ILSVRC2012_val_00000002.JPEG"), GRAY).unwrap();
    std::fs::write(src.join("ILSVRC2012_val_00000003.JPEG"), CMYK).unwrap();
    let map = root.join("val_map.txt");
    std::fs::write(&map, "ILSVRC2012_val_00000001.JPEG 65\nILSVRC2012_val_00000002.JPEG 970\nILSVRC2012_val_00000003.JPEG 230\n").unwrap();

    // Per sample: NVIDIA's <name>.npy files of shape [3, 224, 224] int8.
    let out = root.join("int8_linear");
    let o = opts(DataType::Int8, ImageLayout::Linear);
    let calls = AtomicUsize::new(0);
    let r = preprocess_imagenet_with(&src, &map, &out, &o, &|done, total| {
        assert!(done <= total && total == 3);
        calls.fetch_add(1, Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!((r.samples, r.written, r.skipped, calls.into_inner()), (3, 3, 0, 3));
    let f = read_npy(&out.join("ILSVRC2012_val_00000002.JPEG.npy")).unwrap();
    assert_eq!((f.header.dtype, f.header.shape.clone()), (NpyDtype::I8, vec![3, 224, 224]));
    assert_eq!(f.data()[0] as i8, -46);
    assert!(r.render().contains("3 images"));
    // A second run keeps what exists.
    let again = preprocess_imagenet(&src, &map, &out, &o).unwrap();
    assert_eq!((again.written, again.skipped), (0, 3));

    // Contiguous: one [3, 3, 224, 224] tensor in val-map order.
    let c = ImagenetOptions { output: OutputMode::Contiguous("val.npy".into()), ..o.clone() };
    let r = preprocess_imagenet(&src, &map, &root.join("coalesced"), &c).unwrap();
    assert_eq!(r.output, root.join("coalesced/val.npy"));
    let t = read_npy(&r.output).unwrap();
    assert_eq!(t.header.shape, vec![3, 3, 224, 224]);
    let per = 3 * 224 * 224;
    assert_eq!(&t.data()[..per], read_npy(&out.join("ILSVRC2012_val_00000001.JPEG.npy")).unwrap().data());
    assert_eq!(&t.data()[per..2 * per], f.data());
    assert_eq!(t.data()[2 * per] as i8, 93, "trunc(217 - 123.68)");
    // An existing tensor of the right shape is kept; a different request is refused.
    assert_eq!(preprocess_imagenet(&src, &map, &root.join("coalesced"), &c).unwrap().skipped, 3);
    let other = ImagenetOptions { dtype: DataType::Fp32, ..c.clone() };
    assert!(preprocess_imagenet(&src, &map, &root.join("coalesced"), &other).unwrap_err().to_string().contains("pass overwrite"));
    // limit takes the first images only.
    let lim = ImagenetOptions { limit: Some(1), output: OutputMode::Contiguous("one.npy".into()), ..o.clone() };
    assert_eq!(read_npy(&preprocess_imagenet(&src, &map, &root, &lim).unwrap().output).unwrap().header.shape[0], 1);
}

#[test]
fn preprocess_errors_name_the_culprit() {
    let root = tmpdir("errors");
    let src = root.join("imagenet");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("a.JPEG"), UNIFORM).unwrap();
    std::fs::write(src.join("broken.JPEG"), b"\xFF\xD8\xFF garbage").unwrap();
    let map = root.join("val_map.txt");
    std::fs::write(&map, "a.JPEG 1\nmissing.JPEG 2\n").unwrap();
    let o = opts(DataType::Int8, ImageLayout::Linear);
    let e = preprocess_imagenet(&src, &map, &root.join("out"), &o).unwrap_err().to_string();
    assert!(e.contains("1 of 2 images") && e.contains("missing.JPEG"), "{e}");
    std::fs::write(&map, "a.JPEG 1\nbroken.JPEG 2\n").unwrap();
    let e = preprocess_imagenet(&src, &map, &root.join("out"), &o).unwrap_err().to_string();
    assert!(e.contains("broken.JPEG (val map line 2)"), "{e}");
    std::fs::write(&map, "").unwrap();
    assert!(preprocess_imagenet(&src, &map, &root.join("out"), &o).unwrap_err().to_string().contains("lists no images"));
}
