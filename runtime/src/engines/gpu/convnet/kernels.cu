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

// y[p, c] = act(x[p, c] + bias[c]) over `positions` rows of `channels`; bias may be null.
// In place when x == y. `y_row` and `y_offset`: y's row length and first channel (a concat slice).
extern "C" __global__ void bias_act(const unsigned short* x, unsigned short* y, const float* bias, long long positions, int channels,
                                    int y_row, int y_offset, int kind) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= positions * channels) return;
    int c = (int)(i % channels);
    long long p = i / channels;
    float v = h2f(x[i]) + (bias ? bias[c] : 0.0f);
    y[p * y_row + y_offset + c] = f2h(act(v, kind));
}

// Instance-norm statistics: sum and sum of squares per (sample, channel) into `stats` (f64,
// [n][channels][2], zeroed first). Grid (chunks, n); each block sums `chunk` positions in shared
// memory (f32) and adds them to the totals (f64).
extern "C" __global__ void norm_stats(const unsigned short* x, double* stats, long long positions, int channels, int chunk) {
    extern __shared__ float partial[];  // [channels][2]
    for (int c = threadIdx.x; c < 2 * channels; c += blockDim.x) partial[c] = 0.0f;
    __syncthreads();
    long long n = blockIdx.y;
    long long start = (long long)blockIdx.x * chunk;
    long long end = start + chunk < positions ? start + chunk : positions;
    const unsigned short* base = x + n * positions * channels;
    // Each thread keeps one channel's sums over its rows when the block's threads cover whole rows.
    int rows_per_pass = blockDim.x / channels;
    if (rows_per_pass > 0) {
        int c = threadIdx.x % channels, r = threadIdx.x / channels;
        if (r < rows_per_pass) {
            float s = 0.0f, q = 0.0f;
            for (long long p = start + r; p < end; p += rows_per_pass) {
                float v = h2f(base[p * channels + c]);
                s += v;
                q += v * v;
            }
            atomicAdd(&partial[2 * c], s);
            atomicAdd(&partial[2 * c + 1], q);
        }
    } else {
        for (long long p = start; p < end; p++) {
            for (int c = threadIdx.x; c < channels; c += blockDim.x) {
                float v = h2f(base[p * channels + c]);
                partial[2 * c] += v;
                partial[2 * c + 1] += v * v;
            }
        }
    }
    __syncthreads();
    for (int c = threadIdx.x; c < 2 * channels; c += blockDim.x) atomicAdd(&stats[(n * channels) * 2 + c], (double)partial[c]);
}

// y = act(x * a + b) with a = scale * rstd, b = shift - mean * a per (sample, channel); in place allowed.
extern "C" __global__ void norm_apply(const unsigned short* x, unsigned short* y, const double* stats, const float* params, long long positions,
                                      int channels, float epsilon, int kind, int n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= (long long)n * positions * channels) return;
    int c = (int)(i % channels);
    long long s = i / (positions * channels);
    double mean = stats[(s * channels + c) * 2] / positions;
    double var = stats[(s * channels + c) * 2 + 1] / positions - mean * mean;
    float a = params[c] * (float)rsqrt(fmax(var, 0.0) + (double)epsilon);
    float b = params[channels + c] - (float)mean * a;
    y[i] = f2h(act(h2f(x[i]) * a + b, kind));
}

// Copies the first `channels` of rows of `x_row` into channels [offset, offset + channels) of rows
// of `y_row` (a concatenation's slice).
extern "C" __global__ void copy_slice(const unsigned short* x, unsigned short* y, long long positions, int channels, int x_row, int y_row, int offset) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= positions * channels) return;
    long long p = i / channels;
    int c = (int)(i % channels);
    y[p * y_row + offset + c] = x[p * x_row + c];
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
