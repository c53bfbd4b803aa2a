// The GPU BERT engine's own kernels, compiled by NVRTC when a plan is loaded, with HIDDEN and
// HEAD_DIM defined for the model. Everything else runs in cuBLASLt (the linears, their bias and
// GELU epilogues). Activations are fp16 row-major [tokens, width]; arithmetic is fp32. The
// per-token kernels read the token count from device memory (`total`), so one captured launch
// serves every batch its grid covers.
//
// No headers: NVRTC ships none by default, so fp16 conversions and tensor-core products are
// spelled in PTX (sm_80 and later).

typedef unsigned short half_t;
struct __attribute__((aligned(16))) u4 { unsigned x, y, z, w; };

__device__ __forceinline__ float h2f(half_t h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ half_t f2h(float f) { half_t h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
// Two floats as one fp16 pair: `lo` in the low half (the lower column).
__device__ __forceinline__ unsigned pack2(float lo, float hi) { unsigned r; asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r; }
__device__ __forceinline__ float lo2f(unsigned v) { return h2f((half_t)(v & 0xffff)); }
__device__ __forceinline__ float hi2f(unsigned v) { return h2f((half_t)(v >> 16)); }

// c += a * b: one m16n8k16 tensor-core product, fp16 operands, fp32 accumulators. Fragments
// (g = lane / 4, q = lane % 4): a[0] row g, columns 2q..2q+1; a[1] row g + 8; a[2], a[3] the
// same rows at columns + 8. b[0] rows 2q..2q+1 of column g; b[1] rows + 8. c[0], c[1] row g,
// columns 2q..2q+1; c[2], c[3] row g + 8.
__device__ __forceinline__ void mma16816(float* c, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// b = the B fragment of 16 keys x 8 dims from row-major values in shared memory: lanes 0-15 give
// the addresses of the 16 key rows (at the 8 dims' column); the transposing load hands each lane
// its two keys of one dim.
__device__ __forceinline__ void load_b_transposed(unsigned* b, const half_t* row) {
    unsigned address;
    asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(address) : "l"(row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(b[0]), "=r"(b[1]) : "r"(address));
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o));
    return v;
}

// ---- Int8 plans: each linear's input in int8 at its token's own step (max |x| / 127, computed
// where the input is produced), int32 products dequantized by that step and the weight's. ----

// Round to nearest (ties to even), saturated at +-127: quant.rs's `quantize`.
__device__ __forceinline__ signed char to_i8(float v) {
    int r;
    asm("cvt.rni.s32.f32 %0, %1;" : "=r"(r) : "f"(fminf(fmaxf(v, -127.f), 127.f)));
    return (signed char)r;
}

// The step of values whose magnitudes reach `amax`; 1 when none is finite and non-zero (quant.rs's
// `scale_of`).
__device__ __forceinline__ float step_of(float amax) { return amax > 0.f && amax <= 3.40282347e38f ? amax / 127.f : 1.f; }

#define PAIRS (HIDDEN / 64)  // fp16 pairs per lane: one warp normalises one token

// The warp's token `v` (PAIRS pairs per lane) in int8 at its own step, written to `q` (the row)
// and `step` (quant.rs's `fake_quantize` with per-token scales).
__device__ __forceinline__ void quantize_row(const float (*v)[2], signed char* q, float* step) {
    int lane = threadIdx.x % 32;
    float m = 0.f;
    for (int p = 0; p < PAIRS; p++) m = fmaxf(m, fmaxf(fabsf(v[p][0]), fabsf(v[p][1])));
    float s = step_of(warp_max(m)), inv = 1.f / s;
    for (int p = 0; p < PAIRS; p++) {
        int c = 2 * (p * 32 + lane);
        *(unsigned short*)(q + c) = (unsigned char)to_i8(v[p][0] * inv) | (unsigned short)(unsigned char)to_i8(v[p][1] * inv) << 8;
    }
    if (lane == 0) *step = s;
}

// Layer norm of the warp's token from `v` (PAIRS pairs per lane), written to `out`, and, when `q`
// is not null, in int8 to `q` with its step in `step` (the next linear's input in int8 plans).
__device__ __forceinline__ void layer_norm_store(float (*v)[2], half_t* out, const float* gamma, const float* beta, float eps, signed char* q, float* step) {
    int lane = threadIdx.x % 32;
    float s = 0.f;
    for (int p = 0; p < PAIRS; p++) s += v[p][0] + v[p][1];
    float mean = warp_sum(s) / HIDDEN;
    float d = 0.f;
    for (int p = 0; p < PAIRS; p++) { float a = v[p][0] - mean, b = v[p][1] - mean; d += a * a + b * b; }
    float inv = rsqrtf(warp_sum(d) / HIDDEN + eps);
    for (int p = 0; p < PAIRS; p++) {
        int c = 2 * (p * 32 + lane);
        v[p][0] = (v[p][0] - mean) * inv * gamma[c] + beta[c];
        v[p][1] = (v[p][1] - mean) * inv * gamma[c + 1] + beta[c + 1];
        *(unsigned*)(out + c) = pack2(v[p][0], v[p][1]);
    }
    if (q) quantize_row(v, q, step);
}

// x[t] = LayerNorm(words[ids[t]] + positions[pos[t]] + types[segs[t]]), one warp per token.
extern "C" __global__ void embed_layernorm(half_t* x, const int* ids, const int* segs, const int* pos, const half_t* words, const half_t* positions,
                                           const half_t* types, const float* gamma, const float* beta, const int* total, float eps, signed char* q,
                                           float* steps) {
    int t = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (t >= *total) return;
    const half_t* w = words + (size_t)ids[t] * HIDDEN;
    const half_t* p = positions + (size_t)pos[t] * HIDDEN;
    const half_t* y = types + (size_t)segs[t] * HIDDEN;
    float v[PAIRS][2];
    for (int k = 0; k < PAIRS; k++) {
        int c = 2 * (k * 32 + lane);
        unsigned a = *(const unsigned*)(w + c), b = *(const unsigned*)(p + c), e = *(const unsigned*)(y + c);
        v[k][0] = lo2f(a) + lo2f(b) + lo2f(e);
        v[k][1] = hi2f(a) + hi2f(b) + hi2f(e);
    }
    layer_norm_store(v, x + (size_t)t * HIDDEN, gamma, beta, eps, q ? q + (size_t)t * HIDDEN : q, steps + t);
}

// x[t] = LayerNorm(x[t] + y[t]) (y already carries its linear's bias), one warp per token; in
// int8 too when `q` is not null (see layer_norm_store).
extern "C" __global__ void residual_layernorm(half_t* x, const half_t* y, const float* gamma, const float* beta, const int* total, float eps, signed char* q,
                                              float* steps) {
    int t = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (t >= *total) return;
    half_t* xr = x + (size_t)t * HIDDEN;
    const half_t* yr = y + (size_t)t * HIDDEN;
    float v[PAIRS][2];
    for (int k = 0; k < PAIRS; k++) {
        int c = 2 * (k * 32 + lane);
        unsigned a = *(const unsigned*)(xr + c), b = *(const unsigned*)(yr + c);
        v[k][0] = lo2f(a) + lo2f(b);
        v[k][1] = hi2f(a) + hi2f(b);
    }
    layer_norm_store(v, xr, gamma, beta, eps, q ? q + (size_t)t * HIDDEN : q, steps + t);
}

// q[t] = x[t] in int8 at the token's own step (steps[t]), one warp per token: the attention's
// output as the next linear's input.
extern "C" __global__ void quantize_rows(const half_t* x, signed char* q, float* steps, const int* total) {
    int t = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (t >= *total) return;
    const half_t* xr = x + (size_t)t * HIDDEN;
    float v[PAIRS][2];
    for (int k = 0; k < PAIRS; k++) {
        unsigned a = *(const unsigned*)(xr + 2 * (k * 32 + lane));
        v[k][0] = lo2f(a);
        v[k][1] = hi2f(a);
    }
    quantize_row(v, q + (size_t)t * HIDDEN, steps + t);
}

// logits[t] = (x[t] . w[0] + b[0], x[t] . w[1] + b[1]) in fp32: the question-answering head,
// `w` [2, HIDDEN] fp16. One warp per token.
extern "C" __global__ void qa_head(const half_t* x, const half_t* w, const float* b, float* logits, const int* total) {
    int t = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (t >= *total) return;
    const half_t* xr = x + (size_t)t * HIDDEN;
    float s0 = 0.f, s1 = 0.f;
    for (int k = 0; k < PAIRS; k++) {
        int c = 2 * (k * 32 + lane);
        unsigned a = *(const unsigned*)(xr + c), w0 = *(const unsigned*)(w + c), w1 = *(const unsigned*)(w + HIDDEN + c);
        s0 += lo2f(a) * lo2f(w0) + hi2f(a) * hi2f(w0);
        s1 += lo2f(a) * lo2f(w1) + hi2f(a) * hi2f(w1);
    }
    s0 = warp_sum(s0);
    s1 = warp_sum(s1);
    if (lane == 0) { logits[2 * t] = s0 + b[0]; logits[2 * t + 1] = s1 + b[1]; }
}

#define KEYS 64              // keys per step of the online softmax
#define ROW (HEAD_DIM + 8)   // padded shared-memory row (halves): conflict-free fragment loads
#define WARPS 8

// Fused attention over packed sequences, flash style (online softmax, nothing [L, L] stored):
// ctx = softmax(Q K^T * scale) V per sequence and head. `qkv` is [tokens, 3 * HIDDEN] (Q, K, V,
// heads side by side); sequence s is rows starts[s]..starts[s + 1]. Block (sequence, head): its
// keys and values are staged once in dynamic shared memory (the launch gives room for the
// batch's longest sequence, rounded up to KEYS rows), then each of the 8 warps takes 16 query
// rows at a time; with gridDim.z > 1 (few sequences: more blocks than heads alone give), block z
// takes every gridDim.z-th group of 8 x 16 rows.
extern "C" __global__ void __launch_bounds__(32 * WARPS) attention(const half_t* qkv, half_t* ctx, const int* starts, float scale) {
    extern __shared__ __attribute__((aligned(16))) half_t staged[];
    const int seq = blockIdx.x, head = blockIdx.y;
    const int start = starts[seq], len = starts[seq + 1] - start;
    const int keys = (len + KEYS - 1) / KEYS * KEYS;
    half_t* ks = staged;
    half_t* vs = staged + keys * ROW;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
    const size_t ld = 3 * HIDDEN;
    const half_t* Q = qkv + (size_t)start * ld + head * HEAD_DIM;
    const half_t* K = Q + HIDDEN;
    const half_t* V = Q + 2 * HIDDEN;

    // Rows past the sequence are zero: their scores are masked, and 0 * V stays finite.
    for (int i = threadIdx.x; i < keys * HEAD_DIM / 8; i += blockDim.x) {
        int row = i / (HEAD_DIM / 8), col = (i % (HEAD_DIM / 8)) * 8;
        u4 kv = {0, 0, 0, 0}, vv = {0, 0, 0, 0};
        if (row < len) {
            kv = *(const u4*)(K + row * ld + col);
            vv = *(const u4*)(V + row * ld + col);
        }
        *(u4*)(ks + row * ROW + col) = kv;
        *(u4*)(vs + row * ROW + col) = vv;
    }
    __syncthreads();

    for (int first = (blockIdx.z * WARPS + warp) * 16; first < len; first += gridDim.z * WARPS * 16) {
        const int r0 = first + g, r1 = r0 + 8;
        unsigned qa[HEAD_DIM / 16][4];
        for (int k = 0; k < HEAD_DIM / 16; k++) {
            int c = k * 16 + 2 * q;
            qa[k][0] = r0 < len ? *(const unsigned*)(Q + r0 * ld + c) : 0u;
            qa[k][1] = r1 < len ? *(const unsigned*)(Q + r1 * ld + c) : 0u;
            qa[k][2] = r0 < len ? *(const unsigned*)(Q + r0 * ld + c + 8) : 0u;
            qa[k][3] = r1 < len ? *(const unsigned*)(Q + r1 * ld + c + 8) : 0u;
        }
        float o[HEAD_DIM / 8][4];
        for (int d = 0; d < HEAD_DIM / 8; d++) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.f;
        float m0 = -1e30f, m1 = -1e30f, l0 = 0.f, l1 = 0.f;

        for (int c0 = 0; c0 < len; c0 += KEYS) {
            float s[KEYS / 8][4];
            for (int j = 0; j < KEYS / 8; j++) {
                s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
                const half_t* kr = ks + (c0 + j * 8 + g) * ROW + 2 * q;
                for (int k = 0; k < HEAD_DIM / 16; k++) {
                    unsigned b[2] = {*(const unsigned*)(kr + k * 16), *(const unsigned*)(kr + k * 16 + 8)};
                    mma16816(s[j], qa[k], b);
                }
            }
            float x0 = m0, x1 = m1;
            for (int j = 0; j < KEYS / 8; j++) {
                for (int e = 0; e < 4; e++) {
                    int key = c0 + j * 8 + 2 * q + (e & 1);
                    s[j][e] = key < len ? s[j][e] * scale : -1e30f;
                }
                x0 = fmaxf(x0, fmaxf(s[j][0], s[j][1]));
                x1 = fmaxf(x1, fmaxf(s[j][2], s[j][3]));
            }
            for (int o2 = 1; o2 < 4; o2 <<= 1) {
                x0 = fmaxf(x0, __shfl_xor_sync(0xffffffff, x0, o2));
                x1 = fmaxf(x1, __shfl_xor_sync(0xffffffff, x1, o2));
            }
            const float a0 = __expf(m0 - x0), a1 = __expf(m1 - x1);
            m0 = x0;
            m1 = x1;
            l0 *= a0;
            l1 *= a1;
            for (int d = 0; d < HEAD_DIM / 8; d++) { o[d][0] *= a0; o[d][1] *= a0; o[d][2] *= a1; o[d][3] *= a1; }
            for (int j = 0; j < KEYS / 8; j++) {
                s[j][0] = __expf(s[j][0] - m0);
                s[j][1] = __expf(s[j][1] - m0);
                s[j][2] = __expf(s[j][2] - m1);
                s[j][3] = __expf(s[j][3] - m1);
                l0 += s[j][0] + s[j][1];
                l1 += s[j][2] + s[j][3];
            }
            // P V: the score accumulators of 16 keys are, as they lie, the A fragment of the product.
            for (int k = 0; k < KEYS / 16; k++) {
                unsigned pa[4] = {pack2(s[2 * k][0], s[2 * k][1]), pack2(s[2 * k][2], s[2 * k][3]), pack2(s[2 * k + 1][0], s[2 * k + 1][1]),
                                  pack2(s[2 * k + 1][2], s[2 * k + 1][3])};
                const half_t* vr = vs + (c0 + k * 16 + lane % 16) * ROW;
                for (int d = 0; d < HEAD_DIM / 8; d++) {
                    unsigned b[2];
                    load_b_transposed(b, vr + d * 8);
                    mma16816(o[d], pa, b);
                }
            }
        }
        for (int o2 = 1; o2 < 4; o2 <<= 1) {
            l0 += __shfl_xor_sync(0xffffffff, l0, o2);
            l1 += __shfl_xor_sync(0xffffffff, l1, o2);
        }
        half_t* out = ctx + (size_t)start * HIDDEN + head * HEAD_DIM + 2 * q;
        for (int d = 0; d < HEAD_DIM / 8; d++) {
            if (r0 < len) *(unsigned*)(out + (size_t)r0 * HIDDEN + d * 8) = pack2(o[d][0] / l0, o[d][1] / l0);
            if (r1 < len) *(unsigned*)(out + (size_t)r1 * HIDDEN + d * 8) = pack2(o[d][2] / l1, o[d][3] / l1);
        }
    }
}

#define DEQUANTIZE_THREADS 256

// The int8 linears' epilogue, one block of DEQUANTIZE_THREADS per row of `width` values: v = acc *
// (x_step[row] * w_scale[c]) + bias[c], then GELU's tanh form when `gelu` (as cuBLASLt's epilogue in
// fp16 plans); written to `y` in fp16, or, when `q` is not null, in int8 at the row's own step,
// written to `q_step[row]` (the next linear's input). The int8 case reads the row twice (its
// largest magnitude first), from cache.
extern "C" __global__ void __launch_bounds__(DEQUANTIZE_THREADS) dequantize(const int* acc, const float* w_scale, const float* bias, const float* x_step, int width,
                                                                            int gelu, half_t* y, signed char* q, float* q_step) {
    __shared__ float warps[DEQUANTIZE_THREADS / 32];
    const size_t row = blockIdx.x;
    const int* a = acc + row * width;
    const float xs = x_step[row];
    auto value = [&](int c) {
        float v = (float)a[c] * (xs * w_scale[c]) + bias[c];
        if (gelu) {
            float u = 0.7978846f * (v + 0.044715f * v * v * v);
            v = 0.5f * v * (2.f - 2.f / (__expf(2.f * u) + 1.f));
        }
        return v;
    };
    if (!q) {
        for (int c = threadIdx.x; c < width; c += blockDim.x) y[row * width + c] = f2h(value(c));
        return;
    }
    float m = 0.f;
    for (int c = threadIdx.x; c < width; c += blockDim.x) m = fmaxf(m, fabsf(value(c)));
    m = warp_max(m);
    if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = m;
    __syncthreads();
    m = 0.f;
    for (int w = 0; w < DEQUANTIZE_THREADS / 32; w++) m = fmaxf(m, warps[w]);
    const float s = step_of(m), inv = 1.f / s;
    for (int c = threadIdx.x; c < width; c += blockDim.x) q[row * width + c] = to_i8(value(c) * inv);
    if (threadIdx.x == 0) q_step[row] = s;
}
