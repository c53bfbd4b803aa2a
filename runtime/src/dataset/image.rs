//! Decoded 8-bit images as `cv2.imread` gives them (ResNet50's ImageNet, YOLO's COCO): JPEG
//! decoding with OpenCV's handling of grayscale, CMYK/YCCK and EXIF orientation.

/// Why an image cannot be decoded. The caller names the file and sample.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImageError {
    #[error("JPEG decoding failed: {0}")]
    JpegDecode(jpeg_decoder::Error),
    #[error("JPEG has no frame header")]
    JpegNoFrame,
    #[error("12/16-bit JPEGs are not supported (cv2.imread would reduce them to 8 bits)")]
    Jpeg16Bit,
}

/// An 8-bit RGB image, rows top to bottom, pixels interleaved `RGBRGB...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RgbImage {
    pub width: usize,
    pub height: usize,
    pub data: Vec<u8>,
}

impl RgbImage {
    pub fn new(width: usize, height: usize, data: Vec<u8>) -> RgbImage {
        assert_eq!(data.len(), width * height * 3, "RGB buffer size");
        RgbImage { width, height, data }
    }

    /// A uniform image.
    pub fn filled(width: usize, height: usize, rgb: [u8; 3]) -> RgbImage {
        RgbImage::new(width, height, rgb.iter().copied().cycle().take(width * height * 3).collect())
    }

    pub fn pixel(&self, x: usize, y: usize) -> [u8; 3] {
        let i = (y * self.width + x) * 3;
        [self.data[i], self.data[i + 1], self.data[i + 2]]
    }
}

/// Decodes a JPEG to RGB the way `cv2.imread(path)` + `cvtColor(BGR2RGB)` does: grayscale is
/// replicated to three channels, CMYK/YCCK (Adobe, inverted) is converted with OpenCV's
/// `icvCvt_CMYK2BGR_8u_C4C3R` formula, and the EXIF orientation is applied (`IMREAD_COLOR` does).
pub fn decode_jpeg(bytes: &[u8]) -> Result<RgbImage, ImageError> {
    let mut decoder = jpeg_decoder::Decoder::new(std::io::Cursor::new(bytes));
    let pixels = decoder.decode().map_err(ImageError::JpegDecode)?;
    let info = decoder.info().ok_or(ImageError::JpegNoFrame)?;
    let (w, h) = (info.width as usize, info.height as usize);
    let rgb = match info.pixel_format {
        jpeg_decoder::PixelFormat::RGB24 => pixels,
        jpeg_decoder::PixelFormat::L8 => pixels.iter().flat_map(|&g| [g, g, g]).collect(),
        jpeg_decoder::PixelFormat::CMYK32 => {
            // jpeg-decoder returns 255 - (libjpeg's value) for every CMYK/YCCK channel; OpenCV
            // converts libjpeg's values with c' = k - ((255 - c) * k >> 8), R = c', G = m', B = y'.
            pixels
                .chunks_exact(4)
                .flat_map(|p| {
                    let [c, m, y, k] = [255 - p[0] as i32, 255 - p[1] as i32, 255 - p[2] as i32, 255 - p[3] as i32];
                    let f = |v: i32| (k - (((255 - v) * k) >> 8)) as u8;
                    [f(c), f(m), f(y)]
                })
                .collect()
        }
        jpeg_decoder::PixelFormat::L16 => return Err(ImageError::Jpeg16Bit),
    };
    let image = RgbImage::new(w, h, rgb);
    let orientation = decoder.exif_data().and_then(exif_orientation).unwrap_or(1);
    Ok(apply_orientation(image, orientation))
}

/// The EXIF orientation tag (0x0112) of IFD0, from EXIF data that starts at the TIFF header.
pub fn exif_orientation(tiff: &[u8]) -> Option<u16> {
    let le = match tiff.get(..4)? {
        b"II*\0" => true,
        b"MM\0*" => false,
        _ => return None,
    };
    let u16_at = |o: usize| -> Option<u16> {
        let b: [u8; 2] = tiff.get(o..o + 2)?.try_into().ok()?;
        Some(if le { u16::from_le_bytes(b) } else { u16::from_be_bytes(b) })
    };
    let u32_at = |o: usize| -> Option<u32> {
        let b: [u8; 4] = tiff.get(o..o + 4)?.try_into().ok()?;
        Some(if le { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) })
    };
    let ifd = u32_at(4)? as usize;
    let count = u16_at(ifd)? as usize;
    (0..count).find_map(|i| {
        let entry = ifd + 2 + i * 12;
        // Tag 0x0112, type SHORT (3), one value stored in the first two bytes of the value field.
        (u16_at(entry)? == 0x0112 && u16_at(entry + 2)? == 3).then(|| u16_at(entry + 8)).flatten()
    })
}

/// Applies an EXIF orientation exactly as OpenCV's `ApplyExifOrientation` does (flips and a
/// transpose; 1 and unknown values leave the image alone).
pub fn apply_orientation(img: RgbImage, orientation: u16) -> RgbImage {
    let transpose = |img: &RgbImage| {
        let mut out = vec![0u8; img.data.len()];
        for y in 0..img.height {
            for x in 0..img.width {
                let (s, d) = ((y * img.width + x) * 3, (x * img.height + y) * 3);
                out[d..d + 3].copy_from_slice(&img.data[s..s + 3]);
            }
        }
        RgbImage::new(img.height, img.width, out)
    };
    let flip = |img: RgbImage, horizontal: bool, vertical: bool| {
        let (w, h) = (img.width, img.height);
        let mut out = vec![0u8; img.data.len()];
        for y in 0..h {
            for x in 0..w {
                let sx = if horizontal { w - 1 - x } else { x };
                let sy = if vertical { h - 1 - y } else { y };
                let (s, d) = ((sy * w + sx) * 3, (y * w + x) * 3);
                out[d..d + 3].copy_from_slice(&img.data[s..s + 3]);
            }
        }
        RgbImage::new(w, h, out)
    };
    match orientation {
        2 => flip(img, true, false),
        3 => flip(img, true, true),
        4 => flip(img, false, true),
        5 => transpose(&img),
        6 => flip(transpose(&img), true, false),
        7 => flip(transpose(&img), true, true),
        8 => flip(transpose(&img), false, true),
        _ => img,
    }
}
