// The engine's own kernels (compiled by NVRTC for the GPU at hand): input conversion, int8
// quantization, pools, top-1. Their arguments are `exec.rs`'s launches.
__device__ float h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ unsigned short f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }

// The NHWC fp16 batch the first layer reads, n x hs x ws x cpad (cpad a multiple of 4: the stem
// kernel reads 12), one thread per grid position and group of 4 channels (grid y: the sample), so
// that a warp's 8-byte writes are contiguous. Channel ch at grid position (a, bx) holds image
// channel ch % c of pixel (a * block + sub / block - offset, bx * block + sub % block - offset),
// sub = ch / c, or zero where that is outside the image or sub >= block * block
// (network::SpaceToDepth::source); counters replace the per-channel divisions. Sample b is read at pool + slots[b] * sample_bytes in its own
// element type and layout: DTYPE is a template argument so that a thread's loads are straight-line
// code, all in flight at once (fp16 samples are copied as they are).
template <int DTYPE> __device__ unsigned short sample_f16(const unsigned char* s, int e, float scale) {
    if (DTYPE == 0) return f2h(((const float*)s)[e]);
    if (DTYPE == 1) return ((const unsigned short*)s)[e];
    return f2h((float)((const signed char*)s)[e] * scale);
}
template <int DTYPE> __device__ uint2 convert_group(const unsigned char* s, int first, int c, int h, int w, int block, int y0, int x0,
        int nchw, float scale) {
    int cc = first % c, sx = first / c % block, sy = first / c / block;  // the next channel's source
    unsigned int v[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        int y = y0 + sy, x = x0 + sx;
        v[k] = 0;
        if (sy < block && y >= 0 && y < h && x >= 0 && x < w) {
            v[k] = sample_f16<DTYPE>(s, nchw ? (cc * h + y) * w + x : (y * w + x) * c + cc, scale);
        }
        if (++cc == c) { cc = 0; if (++sx == block) { sx = 0; sy++; } }
    }
    return make_uint2(v[0] | (v[1] << 16), v[2] | (v[3] << 16));
}
extern "C" __global__ void convert_input(const unsigned char* pool, const int* slots, unsigned short* out,
        int c, int h, int w, int hs, int ws, int cpad, int block, int offset,
        long long sample_bytes, int dtype, int nchw, float scale) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x, groups = cpad / 4;
    if (t >= hs * ws * groups) return;
    const int pix = t / groups, first = t % groups * 4, b = blockIdx.y;
    const unsigned char* s = pool + (long long)slots[b] * sample_bytes;
    const int y0 = (pix / ws) * block - offset, x0 = (pix % ws) * block - offset;
    uint2* dst = (uint2*)out + (long long)b * hs * ws * groups + t;
    if (dtype == 0) *dst = convert_group<0>(s, first, c, h, w, block, y0, x0, nchw, scale);
    else if (dtype == 1) *dst = convert_group<1>(s, first, c, h, w, block, y0, x0, nchw, scale);
    else *dst = convert_group<2>(s, first, c, h, w, block, y0, x0, nchw, scale);
}

// 8 fp16 values (a uint4) to int8: round(x / scale) to nearest even, saturated to [-127, 127]
// (the symmetric grid network::quantize uses).
__device__ uint2 to_int8(uint4 v, float scale) {
    unsigned int h[4] = {v.x, v.y, v.z, v.w}, q[2] = {0, 0};
    for (int k = 0; k < 8; k++) {
        int i = __float2int_rn(h2f((unsigned short)(h[k / 2] >> (16 * (k % 2)))) / scale);
        q[k / 4] |= (unsigned int)(max(-127, min(127, i)) & 0xff) << (8 * (k % 4));
    }
    return make_uint2(q[0], q[1]);
}

// `groups` groups of 8 fp16 values to int8 (to_int8).
extern "C" __global__ void quantize(const uint4* in, uint2* out, long long groups, float scale) {
    long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= groups) return;
    out[g] = to_int8(in[g], scale);
}

// The larger of each pair of fp16 values in two words (NaN aside).
__device__ unsigned int max_f16x2(unsigned int a, unsigned int b) {
#if __CUDA_ARCH__ >= 800
    unsigned int m;
    asm("max.f16x2 %0, %1, %2;" : "=r"(m) : "r"(a), "r"(b));
    return m;
#else
    unsigned int m = 0;
    for (int k = 0; k < 2; k++) {
        unsigned short x = (unsigned short)(a >> (16 * k)), y = (unsigned short)(b >> (16 * k));
        m |= (unsigned int)(h2f(x) >= h2f(y) ? x : y) << (16 * k);
    }
    return m;
#endif
}

// Global average pooling of an NHWC int8 tensor on `scale`'s grid (c8 groups of 8 channels) to
// fp16, one thread per sample and group: the dequantization fused, the sums exact in integers.
extern "C" __global__ void average_pool_int8(const uint2* in, uint4* out, long long groups, int c8, int pixels, float scale) {
    long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= groups) return;
    const uint2* x = in + g / c8 * pixels * c8 + g % c8;
    int sum[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll 7
    for (int p = 0; p < pixels; p++) {
        const uint2 v = x[(long long)p * c8];
        for (int k = 0; k < 8; k++) sum[k] += (signed char)(((k < 4 ? v.x : v.y) >> (8 * (k % 4))) & 0xff);
    }
    const float unit = scale / pixels;
    unsigned int h[4] = {0, 0, 0, 0};
    for (int k = 0; k < 8; k++) h[k / 2] |= (unsigned int)f2h((float)sum[k] * unit) << (16 * (k % 2));
    out[g] = make_uint4(h[0], h[1], h[2], h[3]);
}

// 8 channels as the pools read them, fp16 (a uint4) or int8 (a uint2): the value below every other,
// and the larger of two, channel by channel.
struct Fp16x8 {
    typedef uint4 T;
    static __device__ T lowest() { return make_uint4(0xFC00FC00u, 0xFC00FC00u, 0xFC00FC00u, 0xFC00FC00u); }  // -inf
    static __device__ T max(T a, T b) { return make_uint4(max_f16x2(a.x, b.x), max_f16x2(a.y, b.y), max_f16x2(a.z, b.z), max_f16x2(a.w, b.w)); }
};
struct Int8x8 {
    typedef uint2 T;
    static __device__ T lowest() { return make_uint2(0x80808080u, 0x80808080u); }  // -128, below the grid's -127
    static __device__ T max(T a, T b) { return make_uint2(__vmaxs4(a.x, b.x), __vmaxs4(a.y, b.y)); }
};

// The maximum over a kernel x kernel window of group `group` of an NHWC tensor (c8 groups of 8
// channels), padding ignored; with K > 0, of a K x K window whose loads are all issued before the
// first maximum, so that they are in flight at once.
template <typename V, int K> __device__ typename V::T window_max(const typename V::T* in, long long b, int oy, int ox, int group, int c8,
        int h, int w, int kernel, int stride, int pad) {
    const int size = K > 0 ? K : kernel;
    typename V::T v[K > 0 ? K * K : 1];
    typename V::T m = V::lowest();
#pragma unroll
    for (int t = 0; t < size * size; t++) {
        const int y = oy * stride - pad + t / size, x = ox * stride - pad + t % size;
        const typename V::T tap = y >= 0 && y < h && x >= 0 && x < w ? in[((b * h + y) * w + x) * c8 + group] : V::lowest();
        if (K > 0) v[t] = tap;
        else m = V::max(m, tap);
    }
#pragma unroll
    for (int t = 0; t < (K > 0 ? K * K : 0); t++) m = V::max(m, v[t]);
    return m;
}

// Output group g's window maximum (one thread per output pixel and group of 8 channels).
template <typename V> __device__ typename V::T pool_group(const typename V::T* in, long long g, int c8, int h, int w, int ho, int wo,
        int kernel, int stride, int pad) {
    const long long pixel = g / c8;
    const int ox = (int)(pixel % wo), oy = (int)(pixel / wo % ho), group = (int)(g % c8);
    const long long b = pixel / wo / ho;
    return kernel == 3 ? window_max<V, 3>(in, b, oy, ox, group, c8, h, w, kernel, stride, pad)
                       : window_max<V, 0>(in, b, oy, ox, group, c8, h, w, kernel, stride, pad);
}

// Max pooling of an NHWC fp16 tensor (c8 groups of 8 channels) to int8 on quantize's grid:
// quantize(max_pool(x)) in one pass.
extern "C" __global__ void max_pool_int8(const uint4* in, uint2* out, long long groups, int c8, int h, int w, int ho, int wo,
        int kernel, int stride, int pad, float scale) {
    long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= groups) return;
    out[g] = to_int8(pool_group<Fp16x8>(in, g, c8, h, w, ho, wo, kernel, stride, pad), scale);
}

// Max pooling of an NHWC int8 tensor (c8 groups of 8 channels) to int8 on the same grid.
extern "C" __global__ void max_pool_from_int8(const uint2* in, uint2* out, long long groups, int c8, int h, int w, int ho, int wo,
        int kernel, int stride, int pad) {
    long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= groups) return;
    out[g] = pool_group<Int8x8>(in, g, c8, h, w, ho, wo, kernel, stride, pad);
}

// `groups` groups of 8 int8 values to fp16: q * scale.
extern "C" __global__ void dequantize(const uint2* in, uint4* out, long long groups, float scale) {
    long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= groups) return;
    uint2 v = in[g];
    unsigned int q[2] = {v.x, v.y}, h[4] = {0, 0, 0, 0};
    for (int k = 0; k < 8; k++) {
        signed char i = (signed char)((q[k / 4] >> (8 * (k % 4))) & 0xff);
        h[k / 2] |= (unsigned int)f2h((float)i * scale) << (16 * (k % 2));
    }
    out[g] = make_uint4(h[0], h[1], h[2], h[3]);
}

// One warp per sample: the first index of the largest of `classes` logits (row stride `stride`).
extern "C" __global__ void top1(const unsigned short* logits, int* out, int n, int classes, int stride, int offset) {
    int warp = (int)(((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32);
    int lane = threadIdx.x % 32;
    if (warp >= n) return;
    const unsigned short* row = logits + (long long)warp * stride;
    float best = __int_as_float(0xff800000);
    int arg = 0x7fffffff;
    for (int i = lane; i < classes; i += 32) {
        float v = h2f(row[i]);
        if (v > best) { best = v; arg = i; }
    }
    for (int o = 16; o > 0; o /= 2) {
        float ob = __shfl_down_sync(0xffffffffu, best, o);
        int oa = __shfl_down_sync(0xffffffffu, arg, o);
        if (ob > best || (ob == best && oa < arg)) { best = ob; arg = oa; }
    }
    if (lane == 0) out[warp] = arg + offset;
}
