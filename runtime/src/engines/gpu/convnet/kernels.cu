// The convnet engine's own kernels (NVRTC): everything around cuDNN's convolutions, on fp16
// channels-last tensors whose rows hold `padded` channels. Sums and statistics in f32/f64.

__device__ __forceinline__ float act(float x, int kind) {
    switch (kind) {
    case 1: return fmaxf(x, 0.0f);
    case 2: return 1.0f / (1.0f + __expf(-x));
    case 3: return x / (1.0f + __expf(-x));
    default: return x;
    }
}

// Eight fp16 values (one 16-byte load): rows hold a multiple of 8 channels, so a vector never
// straddles two positions and every pass below moves 16 bytes per thread.
struct half8 { unsigned short h[8]; };
__device__ __forceinline__ half8 load8(const unsigned short* p) {
    uint4 u = *reinterpret_cast<const uint4*>(p);
    half8 v;
    unsigned int w[4] = {u.x, u.y, u.z, u.w};
    for (int k = 0; k < 4; k++) { v.h[2 * k] = (unsigned short)(w[k] & 0xffff); v.h[2 * k + 1] = (unsigned short)(w[k] >> 16); }
    return v;
}
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
// KH x KW windows known at compile time (3 x 3, YOLO's) load every tap's pixels before the sums, so
// that a thread has all of them in flight at once rather than one at a time (0 for any window).
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

extern "C" __global__ void depthwise(const unsigned short* x, const unsigned short* w, const float* bias, unsigned short* y, int n, int h, int wd, int channels,
                                     int oh, int ow, int kh, int kw, int sy, int sx, int py, int px, int x_row, int y_row, int kind) {
    extern __shared__ uint4 depthwise_taps[];
    unsigned short* taps = reinterpret_cast<unsigned short*>(depthwise_taps);
    int per_tap = kh * kw;
    for (int i = threadIdx.x; i < channels * per_tap; i += blockDim.x) taps[(i % per_tap) * channels + i / per_tap] = w[i];
    __syncthreads();
    if (kh == 3 && kw == 3) {
        depthwise_rows<3, 3>(x, taps, bias, y, n, h, wd, channels, oh, ow, kh, kw, sy, sx, py, px, x_row, y_row, kind);
    } else {
        depthwise_rows<0, 0>(x, taps, bias, y, n, h, wd, channels, oh, ow, kh, kw, sy, sx, py, px, x_row, y_row, kind);
    }
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
