// The convnet engine's own kernels (NVRTC): everything around cuDNN's convolutions, on fp16
// channels-last tensors whose rows hold `padded` channels. Sums and statistics in f32/f64.

__device__ __forceinline__ float act(float x, int kind) {
    switch (kind) {
    case 1: return fmaxf(x, 0.0f);
    case 2: return 1.0f / (1.0f + __expf(-x));
    // SiLU as x (1 + tanh(x / 2)) / 2: one transcendental op (tanh.approx) where x / (1 + e^-x) took
    // two; YOLO's stem, 64 SiLUs a position, went from 1,023 to 976 us at batch 64 (H200), and its
    // outputs' error stayed that of their fp16 rounding (docs/performance.md).
    case 3: { float t; asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(0.5f * x)); return 0.5f * x * (1.0f + t); }
    default: return x;
    }
}

// Eight fp16 values (one 16-byte load): rows hold a multiple of 8 channels, so a vector never
// straddles two positions and every pass below moves 16 bytes per thread.
struct half8 { unsigned short h[8]; };
__device__ __forceinline__ half8 unpack8(uint4 u) {
    half8 v;
    unsigned int w[4] = {u.x, u.y, u.z, u.w};
    for (int k = 0; k < 4; k++) { v.h[2 * k] = (unsigned short)(w[k] & 0xffff); v.h[2 * k + 1] = (unsigned short)(w[k] >> 16); }
    return v;
}
__device__ __forceinline__ half8 load8(const unsigned short* p) { return unpack8(*reinterpret_cast<const uint4*>(p)); }
__device__ __forceinline__ void store8(unsigned short* p, const half8& v) {
    uint4 u;
    u.x = v.h[0] | ((unsigned int)v.h[1] << 16);
    u.y = v.h[2] | ((unsigned int)v.h[3] << 16);
    u.z = v.h[4] | ((unsigned int)v.h[5] << 16);
    u.w = v.h[6] | ((unsigned int)v.h[7] << 16);
    *reinterpret_cast<uint4*>(p) = u;
}

// y[p, c] = act(x[p, c] + bias[c]) + r[p, c] over `positions` rows of `channels` (a multiple of
// 8), x's rows `x_row` apart, y's `y_row` and r's `r_row`; bias and r may be null. In place when
// x == y.
extern "C" __global__ void bias_act(const unsigned short* x, unsigned short* y, const float* bias, const unsigned short* r, long long positions, int channels, int x_row,
                                    int y_row, int r_row, int kind) {
    int per_row = channels / 8;
    long long vectors = positions * per_row;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < vectors; i += (long long)gridDim.x * blockDim.x) {
        long long p = i / per_row;
        int c0 = (int)(i % per_row) * 8;
        half8 v = load8(x + p * x_row + c0);
        half8 res;
        if (r) res = load8(r + p * r_row + c0);
        for (int k = 0; k < 8; k++) v.h[k] = f2h(act(h2f(v.h[k]) + (bias ? bias[c0 + k] : 0.0f), kind) + (r ? h2f(res.h[k]) : 0.0f));
        store8(y + p * y_row + c0, v);
    }
}

// Depthwise 2-D convolution with its bias and activation: y[b, oy, ox, c] = act(bias[c] + sum over
// (i, j) of x[b, oy * sy - py + i, ox * sx - px + j, c] * w[c, i, j]), zero outside the image;
// channels-last fp16 (x's rows `x_row` apart, y's `y_row`), weights [c][kh][kw], f32 sums. One
// thread per 8 channels of an output position: a warp reads whole rows of the input. Each block
// first copies the weights into shared memory as [tap][c], so a thread's 8 weights of a tap are one
// 16-byte load (in global memory they lie kh * kw apart: 8 scalar loads), and then strides over the
// output (the grid is a few blocks per SM, so the copy is paid a few times per SM, not per row).
// KH x KW windows known at compile time (3 x 3 at stride 2) load every tap's pixels before the
// sums, so that a thread has all of them in flight at once rather than one at a time (0 for any
// window).
// 32-bit indices: the host refuses tensors of 2^31 values or more.
template <int KH, int KW>
__device__ __forceinline__ void depthwise_rows(const unsigned short* x, const unsigned short* taps, const float* bias, unsigned short* y, int n, int h, int wd, int channels,
                                               int oh, int ow, int kh, int kw, int sy, int sx, int py, int px, int x_row, int y_row, int kind) {
    int per_row = channels / 8;
    int vectors = n * oh * ow * per_row;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < vectors; i += gridDim.x * blockDim.x) {
        int p = i / per_row;
        int c0 = (i - p * per_row) * 8;
        int ox = p % ow, t = p / ow;
        int oy = t % oh, b = t / oh;
        float s[8];
#pragma unroll
        for (int k = 0; k < 8; k++) s[k] = bias ? bias[c0 + k] : 0.0f;
        if (KH > 0) {
            half8 v[KH * KW > 0 ? KH * KW : 1];
#pragma unroll
            for (int ky = 0; ky < KH; ky++)
#pragma unroll
                for (int kx = 0; kx < KW; kx++) {
                    int iy = oy * sy - py + ky, ix = ox * sx - px + kx;
                    if (iy >= 0 && iy < h && ix >= 0 && ix < wd) {
                        v[ky * KW + kx] = load8(x + ((b * h + iy) * wd + ix) * x_row + c0);
                    } else {
#pragma unroll
                        for (int k = 0; k < 8; k++) v[ky * KW + kx].h[k] = 0;
                    }
                }
#pragma unroll
            for (int tap = 0; tap < KH * KW; tap++) {
                half8 wk = load8(taps + tap * channels + c0);
#pragma unroll
                for (int k = 0; k < 8; k++) s[k] += h2f(v[tap].h[k]) * h2f(wk.h[k]);
            }
        } else {
            for (int ky = 0; ky < kh; ky++) {
                int iy = oy * sy - py + ky;
                if (iy < 0 || iy >= h) continue;
                for (int kx = 0; kx < kw; kx++) {
                    int ix = ox * sx - px + kx;
                    if (ix < 0 || ix >= wd) continue;
                    half8 v = load8(x + ((b * h + iy) * wd + ix) * x_row + c0);
                    half8 wk = load8(taps + (ky * kw + kx) * channels + c0);
#pragma unroll
                    for (int k = 0; k < 8; k++) s[k] += h2f(v.h[k]) * h2f(wk.h[k]);
                }
            }
        }
        half8 o;
#pragma unroll
        for (int k = 0; k < 8; k++) o.h[k] = f2h(act(s[k], kind));
        store8(y + p * y_row + c0, o);
    }
}

// 3 x 3 at stride 1 (YOLO's head): a thread owns 8 channels of one output column over `run`
// consecutive rows and keeps its 3 x 3 window of input pixels in registers as it walks down, so a
// row costs 3 loads instead of 9 (each input pixel was read 9 times; YOLO's 80 x 80 x 256 layers
// went from 369 to 264 us a batch of 64 on an H200). A block's threads are one row's consecutive
// columns, so the columns' shared pixels meet in L1.
__device__ __forceinline__ void depthwise_columns(const unsigned short* x, const unsigned short* taps, const float* bias, unsigned short* y, int n, int h, int wd, int channels,
                                                  int oh, int ow, int py, int px, int x_row, int y_row, int kind, int run) {
    int per_row = channels / 8;
    int runs = (oh + run - 1) / run;
    int items = n * runs * ow * per_row;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < items; i += gridDim.x * blockDim.x) {
        int q = i / per_row;
        int c0 = (i - q * per_row) * 8;
        int ox = q % ow, t = q / ow;
        int first = (t % runs) * run, b = t / runs;
        int last = first + run < oh ? first + run : oh;
        uint4 window[3][3];
        // Input row `iy` of the window's three columns, zero outside the image.
        auto fetch = [&](uint4* to, int iy) {
#pragma unroll
            for (int kx = 0; kx < 3; kx++) {
                int ix = ox - px + kx;
                bool inside = iy >= 0 && iy < h && ix >= 0 && ix < wd;
                to[kx] = inside ? *reinterpret_cast<const uint4*>(x + ((b * h + iy) * wd + ix) * x_row + c0) : make_uint4(0, 0, 0, 0);
            }
        };
        fetch(window[1], first - py);
        fetch(window[2], first - py + 1);
        for (int oy = first; oy < last; oy++) {
#pragma unroll
            for (int kx = 0; kx < 3; kx++) {
                window[0][kx] = window[1][kx];
                window[1][kx] = window[2][kx];
            }
            fetch(window[2], oy - py + 2);
            float s[8];
#pragma unroll
            for (int k = 0; k < 8; k++) s[k] = bias ? bias[c0 + k] : 0.0f;
#pragma unroll
            for (int tap = 0; tap < 9; tap++) {
                half8 v = unpack8(window[tap / 3][tap % 3]), wk = load8(taps + tap * channels + c0);
#pragma unroll
                for (int k = 0; k < 8; k++) s[k] += h2f(v.h[k]) * h2f(wk.h[k]);
            }
            half8 o;
#pragma unroll
            for (int k = 0; k < 8; k++) o.h[k] = f2h(act(s[k], kind));
            store8(y + ((b * oh + oy) * ow + ox) * y_row + c0, o);
        }
    }
}

// `run`: output rows per thread of the 3 x 3 stride-1 path (the host picks it from the layer's size).
extern "C" __global__ void depthwise(const unsigned short* x, const unsigned short* w, const float* bias, unsigned short* y, int n, int h, int wd, int channels,
                                     int oh, int ow, int kh, int kw, int sy, int sx, int py, int px, int x_row, int y_row, int kind, int run) {
    extern __shared__ uint4 depthwise_taps[];
    unsigned short* taps = reinterpret_cast<unsigned short*>(depthwise_taps);
    int per_tap = kh * kw;
    for (int i = threadIdx.x; i < channels * per_tap; i += blockDim.x) taps[(i % per_tap) * channels + i / per_tap] = w[i];
    __syncthreads();
    if (kh == 3 && kw == 3 && sy == 1 && sx == 1) {
        depthwise_columns(x, taps, bias, y, n, h, wd, channels, oh, ow, py, px, x_row, y_row, kind, run);
    } else if (kh == 3 && kw == 3) {
        depthwise_rows<3, 3>(x, taps, bias, y, n, h, wd, channels, oh, ow, kh, kw, sy, sx, py, px, x_row, y_row, kind);
    } else {
        depthwise_rows<0, 0>(x, taps, bias, y, n, h, wd, channels, oh, ow, kh, kw, sy, sx, py, px, x_row, y_row, kind);
    }
}

// A 2-D convolution of an input of few channels (rows of P = 8 or 16 fp16 values: an image
// network's stem) on tensor cores, bias and activation fused: the implicit GEMM of output positions
// x (taps x P) x output channels by mma.sync m16n8k16 (fp16 products, f32 sums). cuDNN's kernels,
// made for hundreds of channels, ran YOLO's stem at a fraction of the memory's speed. A warp
// computes 16 consecutive output positions x 8 * NT channels at a time; a k-step is 16 values, two
// taps of P = 8 or one of P = 16. Each block first lays the weights out as the B fragments every
// lane's mma reads ([k-step][n-tile][lane], two 32-bit words), and each k-step half's tap as its
// (row, column) offset, in shared memory; the A fragments are read straight from the input as
// 32-bit words (2 channels; none past its `channels` real ones, whose padding is zero), the next
// k-step's while this one's products run.
__device__ __forceinline__ void mma16816(float* d, const unsigned* a, uint2 b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y));
}

// The fragment's k-step `ks`, half `half` (its k 0-7 or 8-15), lane column `t`: which tap and channel.
__device__ __forceinline__ int2 few_channel_k(int p, int ks, int half, int t) {
    return p == 8 ? make_int2(2 * ks + half, 2 * t) : make_int2(ks, half * 8 + 2 * t);
}

template <int NT>
__device__ __forceinline__ void few_channel_tiles(const unsigned short* x, const uint2* frags, const int2* offsets, const float* bias, unsigned short* y, int positions, int h,
                                                  int wd, int channels, int p, int steps, int oh, int ow, int sy, int sx, int py, int px, int x_row, int y_row, int kind) {
    int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    int per_block = blockDim.x >> 5, tiles = (positions + 15) / 16;
    for (int tile = blockIdx.x * per_block + (threadIdx.x >> 5); tile < tiles; tile += gridDim.x * per_block) {
        // The lane's two rows: output positions g and g + 8 of the tile.
        int r[2] = {tile * 16 + g, tile * 16 + g + 8}, top[2], left[2], image[2];
#pragma unroll
        for (int row = 0; row < 2; row++) {
            int q = r[row] < positions ? r[row] : 0;
            int ox = q % ow, rest = q / ow;
            top[row] = (rest % oh) * sy - py;
            left[row] = ox * sx - px;
            image[row] = rest / oh;
        }
        // A fragment registers: (row g, k 0-7), (row g + 8, k 0-7), (row g, k 8-15), (row g + 8, k 8-15).
        auto fetch = [&](unsigned* a, int ks) {
#pragma unroll
            for (int half = 0; half < 2; half++) {
                int2 at = offsets[2 * ks + half];
                int c = few_channel_k(p, ks, half, t).y;
#pragma unroll
                for (int row = 0; row < 2; row++) {
                    int iy = top[row] + at.x, ix = left[row] + at.y;
                    bool inside = r[row] < positions && c < channels && iy >= 0 && iy < h && ix >= 0 && ix < wd;
                    a[half * 2 + row] = inside ? *reinterpret_cast<const unsigned*>(x + ((long long)(image[row] * h + iy) * wd + ix) * x_row + c) : 0u;
                }
            }
        };
        float acc[NT][4];
#pragma unroll
        for (int j = 0; j < NT; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
        unsigned a[4], next[4];
        fetch(a, 0);
        for (int ks = 0; ks < steps; ks++) {
            if (ks + 1 < steps) fetch(next, ks + 1);
#pragma unroll
            for (int j = 0; j < NT; j++) mma16816(acc[j], a, frags[(ks * NT + j) * 32 + lane]);
#pragma unroll
            for (int k = 0; k < 4; k++) a[k] = next[k];
        }
        // D fragment: (row g, channels 2t, 2t + 1), (row g + 8, the same) of each 8-channel tile.
#pragma unroll
        for (int j = 0; j < NT; j++) {
            int c = 8 * j + 2 * t;
            float b0 = bias ? bias[c] : 0.0f, b1 = bias ? bias[c + 1] : 0.0f;
#pragma unroll
            for (int row = 0; row < 2; row++) {
                if (r[row] >= positions) continue;
                unsigned lo = f2h(act(acc[j][2 * row] + b0, kind)), hi = f2h(act(acc[j][2 * row + 1] + b1, kind));
                *reinterpret_cast<unsigned*>(y + (long long)r[row] * y_row + c) = lo | (hi << 16);
            }
        }
    }
}

// Weights [8 * out_tiles][kh * kw][p] fp16; `positions`: the batch's output positions.
extern "C" __global__ void few_channel_conv(const unsigned short* x, const unsigned short* w, const float* bias, unsigned short* y, int positions, int h, int wd, int channels,
                                            int p, int out_tiles, int oh, int ow, int kh, int kw, int sy, int sx, int py, int px, int x_row, int y_row, int kind) {
    extern __shared__ uint2 few_channel_frags[];
    int taps = kh * kw, steps = (taps * p + 15) / 16;
    // After the fragments: each k-step half's tap as (row, column) offsets; a tap past the last is
    // far outside any image, so its values read as zeros.
    int2* offsets = reinterpret_cast<int2*>(few_channel_frags + steps * out_tiles * 32);
    for (int i = threadIdx.x; i < 2 * steps; i += blockDim.x) {
        int tap = few_channel_k(p, i / 2, i % 2, 0).x;
        offsets[i] = tap < taps ? make_int2(tap / kw, tap % kw) : make_int2(1 << 30, 0);
    }
    // B fragment registers: (k 2t, 2t + 1; column g), (k 2t + 8, 2t + 9; column g), column g being
    // output channel 8j + g.
    for (int i = threadIdx.x; i < steps * out_tiles * 32; i += blockDim.x) {
        int lane = i & 31, j = (i >> 5) % out_tiles, ks = (i >> 5) / out_tiles;
        int o = 8 * j + (lane >> 2);
        unsigned v[2];
        for (int half = 0; half < 2; half++) {
            int2 k = few_channel_k(p, ks, half, lane & 3);
            v[half] = k.x < taps ? *reinterpret_cast<const unsigned*>(w + ((long long)o * taps + k.x) * p + k.y) : 0u;
        }
        few_channel_frags[i] = make_uint2(v[0], v[1]);
    }
    __syncthreads();
#define FEW_CHANNEL_TILES(NT) few_channel_tiles<NT>(x, few_channel_frags, offsets, bias, y, positions, h, wd, channels, p, steps, oh, ow, sy, sx, py, px, x_row, y_row, kind)
    switch (out_tiles) {
    case 1: FEW_CHANNEL_TILES(1); break;
    case 2: FEW_CHANNEL_TILES(2); break;
    case 3: FEW_CHANNEL_TILES(3); break;
    case 4: FEW_CHANNEL_TILES(4); break;
    case 5: FEW_CHANNEL_TILES(5); break;
    case 6: FEW_CHANNEL_TILES(6); break;
    case 7: FEW_CHANNEL_TILES(7); break;
    default: FEW_CHANNEL_TILES(8); break;
    }
#undef FEW_CHANNEL_TILES
}

// Instance-norm statistics, deterministically: each block sums its `chunk` positions of one sample
// into `partials` (f32, [n][blocks][channels][2]: sum, sum of squares), in a fixed order, so that
// replays give the same bits. Grid (blocks, n); a thread owns 8 channels of every
// `rows_per_pass`-th row, sums them in registers, and the block adds the threads' sums row by row.
extern "C" __global__ void norm_stats(const unsigned short* x, float* partials, long long positions, int channels, int chunk) {
    extern __shared__ float sums[];  // [rows_per_pass][channels][2]
    int per_row = channels / 8;
    long long start = (long long)blockIdx.x * chunk;
    long long end = start + chunk < positions ? start + chunk : positions;
    const unsigned short* base = x + blockIdx.y * positions * channels;
    // A row wider than the block: each thread walks several vectors of every row (rows_per_pass = 1).
    int lanes = per_row <= (int)blockDim.x ? per_row : (int)blockDim.x;
    int rows_per_pass = (int)blockDim.x / lanes;
    int r = threadIdx.x / lanes;
    if (r < rows_per_pass) {
        for (int v = threadIdx.x % lanes; v < per_row; v += lanes) {
            float s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, q[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            for (long long p = start + r; p < end; p += rows_per_pass) {
                half8 h = load8(base + p * channels + v * 8);
                for (int k = 0; k < 8; k++) {
                    float f = h2f(h.h[k]);
                    s[k] += f;
                    q[k] += f * f;
                }
            }
            for (int k = 0; k < 8; k++) {
                sums[(r * channels + v * 8 + k) * 2] = s[k];
                sums[(r * channels + v * 8 + k) * 2 + 1] = q[k];
            }
        }
    }
    __syncthreads();
    float* out = partials + ((long long)blockIdx.y * gridDim.x + blockIdx.x) * channels * 2;
    for (int c = threadIdx.x; c < 2 * channels; c += blockDim.x) {
        float total = 0.0f;
        for (int row = 0; row < rows_per_pass; row++) total += sums[row * channels * 2 + c];
        out[c] = total;
    }
}

// Per (sample, channel): the blocks' sums added in order (f64), and the affine map they give,
// a = scale * rstd and b = shift - mean * a, into `ab` (f32 pairs), so the pass over the tensor
// does one FMA per value.
extern "C" __global__ void norm_finish(const float* partials, float* ab, const float* params, long long positions, int channels, int blocks, float epsilon, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n * channels) return;
    int s = i / channels, c = i % channels;
    double sum = 0.0, squares = 0.0;
    for (int b = 0; b < blocks; b++) {
        const float* p = partials + (((long long)s * blocks + b) * channels + c) * 2;
        sum += p[0];
        squares += p[1];
    }
    double mean = sum / positions;
    double var = squares / positions - mean * mean;
    float a = params[c] * (float)rsqrt(fmax(var, 0.0) + (double)epsilon);
    ab[2 * i] = a;
    ab[2 * i + 1] = params[channels + c] - (float)mean * a;
}

// y = act(x * a + b) per (sample, channel) from `ab`; in place allowed.
extern "C" __global__ void norm_apply(const unsigned short* x, unsigned short* y, const float* ab, long long positions, int channels, int kind, int n) {
    int per_row = channels / 8;
    long long vectors = (long long)n * positions * per_row;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < vectors; i += (long long)gridDim.x * blockDim.x) {
        long long s = i / (positions * per_row);
        const float* m = ab + 2 * (s * channels + (i % per_row) * 8);
        half8 v = load8(x + i * 8);
        for (int k = 0; k < 8; k++) v.h[k] = f2h(act(h2f(v.h[k]) * m[2 * k] + m[2 * k + 1], kind));
        store8(y + i * 8, v);
    }
}

// Copies channels [x_offset, x_offset + channels) of rows of `x_row` into channels
// [offset, offset + channels) of rows of `y_row` (a concatenation's or a split's slice); 8 at a
// time when every count is a multiple of 8.
extern "C" __global__ void copy_slice(const unsigned short* x, unsigned short* y, long long positions, int channels, int x_row, int x_offset, int y_row, int offset) {
    bool wide = (channels | x_row | x_offset | y_row | offset) % 8 == 0;
    int step = wide ? 8 : 1;
    int per_row = channels / step;
    long long items = positions * per_row;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < items; i += (long long)gridDim.x * blockDim.x) {
        long long p = i / per_row;
        int c = (int)(i % per_row) * step;
        if (wide) store8(y + p * y_row + offset + c, load8(x + p * x_row + x_offset + c));
        else y[p * y_row + offset + c] = x[p * x_row + x_offset + c];
    }
}

// NC... f32 (logical channels) -> channels-last fp16 (padded, zeros on padding).
extern "C" __global__ void to_channels_last(const float* x, unsigned short* y, long long positions, int channels, int padded, int n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= (long long)n * positions * padded) return;
    int c = (int)(i % padded);
    long long p = (i / padded) % positions, s = i / (padded * positions);
    y[i] = f2h(c < channels ? x[(s * channels + c) * positions + p] : 0.0f);
}

// Channels-last fp16 (padded) -> NC... f32 (logical channels).
extern "C" __global__ void from_channels_last(const unsigned short* x, float* y, long long positions, int channels, int padded, int n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= (long long)n * positions * channels) return;
    long long p = i % positions, c = (i / positions) % channels, s = i / (positions * channels);
    y[i] = h2f(x[(s * positions + p) * padded + c]);
}

// The same conversion in 32 x 32 tiles of (position, channel) through shared memory, so that both
// the reads (along a row's channels) and the writes (along a channel's positions) are coalesced;
// grid (positions / 32, channels / 32, n), blocks of 32 x 8 threads. The network's ToDense ops.
extern "C" __global__ void to_dense_tiles(const unsigned short* x, float* y, int positions, int channels, int row) {
    __shared__ float tile[32][33];
    int p0 = blockIdx.x * 32, c0 = blockIdx.y * 32, tx = threadIdx.x;
    const unsigned short* xs = x + blockIdx.z * (long long)positions * row;
    float* ys = y + blockIdx.z * (long long)positions * channels;
    for (int j = threadIdx.y; j < 32; j += 8) {
        int p = p0 + j, c = c0 + tx;
        if (p < positions && c < channels) tile[j][tx] = h2f(xs[(long long)p * row + c]);
    }
    __syncthreads();
    for (int j = threadIdx.y; j < 32; j += 8) {
        int c = c0 + j, p = p0 + tx;
        if (p < positions && c < channels) ys[(long long)c * positions + p] = tile[tx][j];
    }
}
