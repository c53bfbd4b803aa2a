//! OpenCV's `cv2.resize(img, (w, h), interpolation=cv2.INTER_AREA)` for 8-bit interleaved images,
//! reimplemented so the ResNet50 preprocessing matches the MLPerf reference and NVIDIA's
//! `preprocess_data.py`, which both resize with INTER_AREA; and INTER_LINEAR ([`resize_linear`]),
//! which ultralytics' letterbox resizes with (YOLO).
//!
//! OpenCV (modules/imgproc/src/resize.cpp) takes one of three paths for INTER_AREA:
//!
//! - **Integer shrink** (both scale factors whole numbers): each output pixel is the mean of a
//!   `sx * sy` block, rounded half up (`(sum + area/2) / area`, the integer arithmetic of
//!   `resizeAreaFast`'s vector paths).
//! - **General shrink** (both factors >= 1): `resizeArea` with `computeResizeAreaTab` weights: each
//!   output pixel is the area-weighted mean of the source pixels its footprint covers, accumulated in
//!   `f32` in OpenCV's order (horizontal pass per source row, then rows weighted into a sum), and
//!   converted with `saturate_cast<uchar>` (round half to even).
//! - **Enlarge** (either factor < 1): bilinear interpolation with INTER_AREA's own coefficients
//!   (`fx = (dx+1) - (sx+1)/scale`, fractional part), in OpenCV's 11-bit fixed point: a horizontal
//!   pass to `int`, then `VResizeLinear`'s `((b0*(S0>>4))>>16 + (b1*(S1>>4))>>16 + 2) >> 2`.
//!
//! The same order of floating-point operations as OpenCV's scalar code is used, so results are
//! bit-identical to the OpenCV builds checked (opencv-python 5.0 on x86-64, random images of many
//! sizes). Known possible differences: integer-factor shrinks, whose rounding has varied between
//! OpenCV versions and SIMD paths (half up vs half to even on exact ties); ImageNet has few images
//! whose short side is an exact multiple of 256 with an exactly proportional long side.

/// Resizes an interleaved 8-bit image of `channels` channels from `sw x sh` to `dw x dh` with
/// OpenCV's INTER_AREA semantics.
pub fn resize_area(src: &[u8], sw: usize, sh: usize, channels: usize, dw: usize, dh: usize) -> Vec<u8> {
    assert_eq!(src.len(), sw * sh * channels, "source buffer size");
    assert!(sw > 0 && sh > 0 && dw > 0 && dh > 0, "empty image");
    if sw == dw && sh == dh {
        return src.to_vec();
    }
    let inv_scale_x = dw as f64 / sw as f64;
    let inv_scale_y = dh as f64 / sh as f64;
    let scale_x = 1.0 / inv_scale_x;
    let scale_y = 1.0 / inv_scale_y;
    if scale_x >= 1.0 && scale_y >= 1.0 {
        let iscale_x = scale_x.round() as usize;
        let iscale_y = scale_y.round() as usize;
        if (scale_x - iscale_x as f64).abs() < f64::EPSILON && (scale_y - iscale_y as f64).abs() < f64::EPSILON {
            return area_fast(src, sw, channels, dw, dh, iscale_x, iscale_y);
        }
        return area_general(src, sw, sh, channels, dw, dh, scale_x, scale_y);
    }
    linear_area_mode(src, sw, sh, channels, dw, dh, scale_x, scale_y, inv_scale_x, inv_scale_y)
}

/// Whole-number shrink: block means, rounded half up.
fn area_fast(src: &[u8], sw: usize, cn: usize, dw: usize, dh: usize, fx: usize, fy: usize) -> Vec<u8> {
    let area = (fx * fy) as u32;
    let mut out = vec![0u8; dw * dh * cn];
    for dy in 0..dh {
        for dx in 0..dw {
            for c in 0..cn {
                let mut sum = 0u32;
                for y in dy * fy..dy * fy + fy {
                    let row = &src[y * sw * cn..];
                    for x in dx * fx..dx * fx + fx {
                        sum += row[x * cn + c] as u32;
                    }
                }
                out[(dy * dw + dx) * cn + c] = ((sum + area / 2) / area).min(255) as u8;
            }
        }
    }
    out
}

/// One entry of OpenCV's `DecimateAlpha` table: source index `si` contributes `alpha` to
/// destination index `di`.
#[derive(Clone, Copy, Debug)]
struct Alpha {
    si: usize,
    di: usize,
    alpha: f32,
}

/// `computeResizeAreaTab`: the footprint of each destination index over the source axis.
fn area_tab(ssize: usize, dsize: usize, scale: f64) -> Vec<Alpha> {
    let mut tab = Vec::with_capacity(ssize * 2);
    for dx in 0..dsize {
        let fsx1 = dx as f64 * scale;
        let fsx2 = fsx1 + scale;
        let cell_width = scale.min(ssize as f64 - fsx1);
        let mut sx1 = fsx1.ceil() as i64;
        let mut sx2 = fsx2.floor() as i64;
        sx2 = sx2.min(ssize as i64 - 1);
        sx1 = sx1.min(sx2);
        if sx1 as f64 - fsx1 > 1e-3 {
            tab.push(Alpha { di: dx, si: (sx1 - 1) as usize, alpha: ((sx1 as f64 - fsx1) / cell_width) as f32 });
        }
        for sx in sx1..sx2 {
            tab.push(Alpha { di: dx, si: sx as usize, alpha: (1.0 / cell_width) as f32 });
        }
        if fsx2 - sx2 as f64 > 1e-3 {
            tab.push(Alpha { di: dx, si: sx2 as usize, alpha: ((fsx2 - sx2 as f64).min(1.0).min(cell_width) / cell_width) as f32 });
        }
    }
    tab
}

/// OpenCV's `saturate_cast<uchar>(float)`: round half to even, then clamp.
fn saturate_u8(v: f32) -> u8 {
    v.round_ties_even().clamp(0.0, 255.0) as u8
}

/// `resizeArea` (ResizeArea_Invoker) for general shrink factors.
#[allow(clippy::too_many_arguments)]
fn area_general(src: &[u8], sw: usize, sh: usize, cn: usize, dw: usize, dh: usize, scale_x: f64, scale_y: f64) -> Vec<u8> {
    let xtab = area_tab(sw, dw, scale_x);
    let ytab = area_tab(sh, dh, scale_y);
    let width = dw * cn;
    let mut out = vec![0u8; dh * width];
    let mut buf = vec![0f32; width];
    let mut sum = vec![0f32; width];
    let mut prev_dy = ytab[0].di;
    for y in &ytab {
        let (beta, dy, sy) = (y.alpha, y.di, y.si);
        let row = &src[sy * sw * cn..(sy + 1) * sw * cn];
        buf.iter_mut().for_each(|b| *b = 0.0);
        for x in &xtab {
            let (sxn, dxn) = (x.si * cn, x.di * cn);
            for c in 0..cn {
                buf[dxn + c] += row[sxn + c] as f32 * x.alpha;
            }
        }
        if dy != prev_dy {
            let d = &mut out[prev_dy * width..(prev_dy + 1) * width];
            for dx in 0..width {
                d[dx] = saturate_u8(sum[dx]);
                sum[dx] = beta * buf[dx];
            }
            prev_dy = dy;
        } else {
            for dx in 0..width {
                sum[dx] += beta * buf[dx];
            }
        }
    }
    let d = &mut out[prev_dy * width..(prev_dy + 1) * width];
    for dx in 0..width {
        d[dx] = saturate_u8(sum[dx]);
    }
    out
}

const COEF_BITS: u32 = 11;
const COEF_SCALE: f32 = (1 << COEF_BITS) as f32;

/// OpenCV's `saturate_cast<short>(float)` of a coefficient (round half to even).
fn coef(v: f32) -> i32 {
    (v * COEF_SCALE).round_ties_even() as i32
}

/// INTER_AREA's source index and fraction for an enlarged axis (`area_mode` in resizeGeneric):
/// `s = floor(d * scale)`, `f = frac((d+1) - (s+1) / scale)` (0 when not positive), computed in
/// `f64` and rounded to `f32` as OpenCV does.
fn area_mode_offset(d: usize, scale: f64, inv_scale: f64) -> (usize, f32) {
    let s = (d as f64 * scale).floor();
    let f = ((d + 1) as f64 - (s + 1.0) * inv_scale) as f32;
    let f = if f <= 0.0 { 0.0 } else { f - f.floor() };
    (s.max(0.0) as usize, f)
}

/// resizeGeneric with INTER_AREA's coefficients in 8-bit fixed point (an enlargement on at least
/// one axis).
#[allow(clippy::too_many_arguments)]
fn linear_area_mode(src: &[u8], sw: usize, sh: usize, cn: usize, dw: usize, dh: usize, scale_x: f64, scale_y: f64, inv_scale_x: f64, inv_scale_y: f64) -> Vec<u8> {
    let y = |dy: usize| {
        let (s, f) = area_mode_offset(dy, scale_y, inv_scale_y);
        (s as isize, f)
    };
    linear_fixed(src, [sw, sh, cn, dw, dh], &|dx| area_mode_offset(dx, scale_x, inv_scale_x), &y)
}

/// OpenCV's `cv2.resize(img, (w, h), interpolation=cv2.INTER_LINEAR)` for 8-bit interleaved
/// images: `resizeGeneric`'s bilinear coefficients (`f = (d + 0.5) * scale - 0.5`, computed in
/// `f64` and rounded to `f32`, its floor the source index; a negative index is 0 with fraction 0
/// on the horizontal axis and clamped rows on the vertical) in the same 11-bit fixed point as
/// INTER_AREA's enlargement. A shrink by exactly 2 on both axes takes INTER_AREA's block means,
/// as OpenCV does.
pub fn resize_linear(src: &[u8], sw: usize, sh: usize, channels: usize, dw: usize, dh: usize) -> Vec<u8> {
    assert_eq!(src.len(), sw * sh * channels, "source buffer size");
    assert!(sw > 0 && sh > 0 && dw > 0 && dh > 0, "empty image");
    if sw == dw && sh == dh {
        return src.to_vec();
    }
    let (scale_x, scale_y) = (1.0 / (dw as f64 / sw as f64), 1.0 / (dh as f64 / sh as f64));
    if (scale_x - 2.0).abs() < f64::EPSILON && (scale_y - 2.0).abs() < f64::EPSILON {
        return area_fast(src, sw, channels, dw, dh, 2, 2);
    }
    let offset = |d: usize, scale: f64| -> (isize, f32) {
        let f = ((d as f64 + 0.5) * scale - 0.5) as f32;
        let s = f.floor();
        (s as isize, f - s)
    };
    let x = |dx: usize| match offset(dx, scale_x) {
        (s, _) if s < 0 => (0, 0.0),
        (s, f) => (s as usize, f),
    };
    linear_fixed(src, [sw, sh, channels, dw, dh], &x, &|dy| offset(dy, scale_y))
}

/// resizeGeneric's bilinear pass in 11-bit fixed point: `x` and `y` give each destination column's
/// and row's source index and fraction. A horizontal pass to `int` per source row, then
/// `VResizeLinear`'s `((b0*(S0>>4))>>16 + (b1*(S1>>4))>>16 + 2) >> 2`; both rows clamped to the
/// image (a row index of -1 reads row 0 twice).
fn linear_fixed(src: &[u8], [sw, sh, cn, dw, dh]: [usize; 5], x: &dyn Fn(usize) -> (usize, f32), y: &dyn Fn(usize) -> (isize, f32)) -> Vec<u8> {
    // Horizontal table: for each destination column, source column and the two coefficients;
    // columns whose source is the last one (xmax region) take it with weight ONE.
    let xs: Vec<(usize, i32, i32, bool)> = (0..dw)
        .map(|dx| {
            let (sx, fx) = x(dx);
            // OpenCV's xmax region: at or past the last source column the pixel is copied.
            if sx + 1 >= sw { (sw - 1, 0, 0, true) } else { (sx, coef(1.0 - fx), coef(fx), false) }
        })
        .collect();
    let width = dw * cn;
    let hrow = |sy: usize| -> Vec<i32> {
        let row = &src[sy * sw * cn..(sy + 1) * sw * cn];
        let mut out = vec![0i32; width];
        for (dx, &(sx, a0, a1, edge)) in xs.iter().enumerate() {
            for c in 0..cn {
                out[dx * cn + c] = if edge { row[sx * cn + c] as i32 * (1 << COEF_BITS) } else { row[sx * cn + c] as i32 * a0 + row[(sx + 1) * cn + c] as i32 * a1 };
            }
        }
        out
    };
    let mut out = vec![0u8; dh * width];
    let mut cache: Vec<(usize, Vec<i32>)> = Vec::new();
    for dy in 0..dh {
        let (sy, fy) = y(dy);
        let b0 = coef(1.0 - fy);
        let b1 = coef(fy);
        let r0 = sy.clamp(0, sh as isize - 1) as usize;
        let r1 = (sy + 1).clamp(0, sh as isize - 1) as usize;
        let mut rows: [Option<&Vec<i32>>; 2] = [None, None];
        for r in [r0, r1] {
            if !cache.iter().any(|(k, _)| *k == r) {
                if cache.len() >= 4 {
                    cache.remove(0);
                }
                cache.push((r, hrow(r)));
            }
        }
        for (slot, r) in rows.iter_mut().zip([r0, r1]) {
            *slot = cache.iter().find(|(k, _)| *k == r).map(|(_, v)| v);
        }
        let (s0, s1) = (rows[0].unwrap(), rows[1].unwrap());
        let d = &mut out[dy * width..(dy + 1) * width];
        for x in 0..width {
            let v = ((b0 * (s0[x] >> 4)) >> 16) + ((b1 * (s1[x] >> 4)) >> 16) + 2;
            d[x] = (v >> 2).clamp(0, 255) as u8;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_images_stay_uniform() {
        for &(sw, sh, dw, dh) in &[(500, 375, 341, 256), (200, 150, 341, 256), (300, 300, 256, 256), (512, 512, 256, 256), (257, 300, 256, 298)] {
            let src: Vec<u8> = (0..sw * sh).flat_map(|_| [200u8, 100, 50]).collect();
            let out = resize_area(&src, sw, sh, 3, dw, dh);
            assert_eq!(out.len(), dw * dh * 3);
            assert!(out.chunks(3).all(|p| p == [200, 100, 50]), "{sw}x{sh} -> {dw}x{dh}");
        }
    }

    #[test]
    fn integer_shrink_is_block_mean_rounded_half_up() {
        // 4x2 gray -> 2x1: blocks (1,2,5,6) and (3,4,7,9).
        let src = [1u8, 2, 3, 4, 5, 6, 7, 9];
        // (14 + 2) / 4 = 4 (3.5 rounds up), (23 + 2) / 4 = 6 (5.75)
        assert_eq!(resize_area(&src, 4, 2, 1, 2, 1), vec![4, 6]);
    }

    #[test]
    fn fractional_shrink_weights_partial_pixels() {
        // 3 -> 2 columns, one row: footprints [0, 1.5) and [1.5, 3): (10 + 20*0.5)/1.5 = 13.33 -> 13,
        // (20*0.5 + 40)/1.5 = 33.33 -> 33.
        assert_eq!(resize_area(&[10, 20, 40], 3, 1, 1, 2, 1), vec![13, 33]);
        // 5 -> 2: [0, 2.5) and [2.5, 5): (0+10+20*0.5)/2.5 = 8, (20*0.5+30+40)/2.5 = 32.
        assert_eq!(resize_area(&[0, 10, 20, 30, 40], 5, 1, 1, 2, 1), vec![8, 32]);
    }

    #[test]
    fn enlarging_matches_opencv_golden_values() {
        // cv2.resize(np.array([[0, 100, 200]], np.uint8), (6, 2), interpolation=cv2.INTER_AREA)
        // (opencv-python 5.0): INTER_AREA enlargement repeats each source pixel, interpolating only
        // where an output pixel straddles two source pixels.
        let out = resize_area(&[0, 100, 200], 3, 1, 1, 6, 2);
        assert_eq!(out, vec![0, 0, 100, 100, 200, 200, 0, 0, 100, 100, 200, 200]);
        // 2 -> 3: fx for dx=1 is 2 - 1*1.5 = 0.5: (0*1024 + 90*1024) -> 45.
        assert_eq!(resize_area(&[0, 90], 2, 1, 1, 3, 1), vec![0, 45, 90]);
    }
}
