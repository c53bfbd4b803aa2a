// Int8 1x1 convolutions on tensor cores (mma.sync m16n8k32, compute capability 8.0 or later), for
// the layers where cuDNN's kernels run far below memory bandwidth (ResNet50's expansions with a
// residual ran at a third of it on an H200). The convolution is a matrix product: row r is output
// pixel r of the batch (NHWC), its K input channels read at pixel (b, oy * stride, ox * stride);
// column c is output channel c, whose K weights are row c of `w` (KRSC with R = S = 1).
//
// The epilogue is the cuDNN graph's (lower.rs writes it per layer): f32 vectors scale, bias and,
// with a residual, ratio at `epilogue`, each `n` long:
//   t = sum * scale[c] + bias[c] (+ z[r][c]);  t = max(t, 0) if relu;  t *= ratio[c] if residual;
//   y[r][c] = round(t) to nearest even, saturated to [-127, 127] (network::quantize's grid).
//
// A block computes TILES_PER_BLOCK consecutive TILE_M x TILE_N tiles (output channels vary
// fastest, so a tile's input rows are read again from L2) with 8 warps (4 along rows, 2 along
// columns, 32 x 64 each). Its work is one sequence of (tile, K chunk) steps, each reading a chunk of
// TILE_K input channels into one of two shared-memory stages by cp.async, so the next step's
// operands (and, at a tile's first chunk, its residual, into one of two tile buffers) load while
// this step multiplies and the previous tile's epilogue writes: a layer with few input channels is
// all memory traffic, and this keeps it in flight. The epilogue goes through shared memory so that
// global reads and writes are 16 bytes per thread, coalesced.
// Requires k % TILE_K == 0 and n % TILE_N == 0 (the builder offers the kernel only then), and
// 2 * (STAGE_BYTES + TILE_BYTES) of dynamic shared memory. TILE_M, TILE_N, TILE_K and
// TILES_PER_BLOCK come from exec.rs (POINTWISE_TILE), which also computes the shared memory.
#define THREADS 256
// Row strides in shared memory, padded so that each fragment load hits 32 distinct banks.
#define AB_STRIDE (TILE_K + 16)
#define OUT_STRIDE (TILE_N + 16)
#define STAGE_BYTES ((TILE_M + TILE_N) * AB_STRIDE)
#define TILE_BYTES (TILE_M * OUT_STRIDE)
// The warps' layout covers 128 x 128; each thread loads the same rows of both operands.
static_assert(TILE_M == 128 && TILE_N == 128 && TILE_K % 32 == 0, "pointwise.cu's tile");
// 16-byte groups of a tile's rows, and of them per thread.
#define OUT_GROUPS_PER_THREAD (TILE_M * TILE_N / 16 / THREADS)
#define OPERAND_GROUPS_PER_THREAD (TILE_M * TILE_K / 16 / THREADS)

__device__ __forceinline__ void mma_s8(int* c, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// 16 bytes from global to shared memory, asynchronously; `bytes` = 0 writes zeros instead.
__device__ __forceinline__ void copy16(signed char* shared, const signed char* global, int bytes) {
    unsigned address = (unsigned)__cvta_generic_to_shared(shared);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(address), "l"(global), "r"(bytes));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;"); }
template <int pending> __device__ __forceinline__ void wait() { asm volatile("cp.async.wait_group %0;" ::"n"(pending)); }

__device__ __forceinline__ int saturate_int8(float t) { return max(-127, min(127, __float2int_rn(t))); }

struct Layer {
    const signed char* x;
    const signed char* w;
    const signed char* z;
    long long m;
    int n, k, h, wd, ho, wo, stride;
};

// Starts loading step `step` of tile `tile` (its first: with the residual) into stage `step % 2`
// and tile buffer `tile % 2` of this block's sequence.
__device__ __forceinline__ void load_step(const Layer& l, signed char* smem, long long tile, int chunk, int step, int ordinal) {
    const int tid = threadIdx.x, col_tiles = l.n / TILE_N;
    const int n0 = (int)(tile % col_tiles) * TILE_N;
    const long long m0 = tile / col_tiles * TILE_M;
    if (chunk == 0 && l.z) {
        signed char* buffer = smem + 2 * STAGE_BYTES + (ordinal % 2) * TILE_BYTES;
#pragma unroll
        for (int i = 0; i < OUT_GROUPS_PER_THREAD; i++) {
            int group = tid + i * THREADS, row = group / (TILE_N / 16), col = (group % (TILE_N / 16)) * 16;
            bool inside = m0 + row < l.m;
            copy16(buffer + row * OUT_STRIDE + col, l.z + (inside ? (m0 + row) * l.n + n0 + col : 0), inside ? 16 : 0);
        }
    }
    signed char* as = smem + (step % 2) * STAGE_BYTES;
    signed char* bs = as + TILE_M * AB_STRIDE;
    const int k0 = chunk * TILE_K;
#pragma unroll
    for (int i = 0; i < OPERAND_GROUPS_PER_THREAD; i++) {
        int group = tid + i * THREADS, row = group / (TILE_K / 16), col = (group % (TILE_K / 16)) * 16;
        long long r = m0 + row, pixel = r;
        if (l.stride != 1) {
            long long b = r / ((long long)l.ho * l.wo);
            int p = (int)(r % ((long long)l.ho * l.wo));
            pixel = (b * l.h + (p / l.wo) * l.stride) * l.wd + (p % l.wo) * l.stride;
        }
        bool inside = r < l.m;
        copy16(as + row * AB_STRIDE + col, l.x + (inside ? pixel * l.k + k0 + col : 0), inside ? 16 : 0);
        copy16(bs + row * AB_STRIDE + col, l.w + (long long)(n0 + row) * l.k + k0 + col, 16);
    }
    commit();
}

extern "C" __global__ void __launch_bounds__(THREADS, 2) pointwise_conv_int8(
        const signed char* __restrict__ x, const signed char* __restrict__ w, const float* __restrict__ epilogue,
        const signed char* __restrict__ z, signed char* __restrict__ y, long long m, int n, int k, int relu,
        int h, int wd, int ho, int wo, int stride) {
    extern __shared__ __align__(16) signed char smem[];
    const Layer l = {x, w, z, m, n, k, h, wd, ho, wo, stride};
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int wm = (warp / 2) * 32, wn = (warp % 2) * 64;
    const int col_tiles = n / TILE_N, chunks = k / TILE_K;
    const long long tiles = (m + TILE_M - 1) / TILE_M * col_tiles;
    const long long first = (long long)blockIdx.x * TILES_PER_BLOCK;
    const int count = (int)min((long long)TILES_PER_BLOCK, tiles - first), steps = count * chunks;
    const float* scale = epilogue;
    const float* bias = epilogue + n;
    const float* ratio = epilogue + 2 * n;

    int acc[2][8][4];
    load_step(l, smem, first, 0, 0, 0);
    for (int step = 0; step < steps; step++) {
        const int ordinal = step / chunks, chunk = step % chunks;
        if (step + 1 < steps) {
            load_step(l, smem, first + (step + 1) / chunks, (step + 1) % chunks, step + 1, (step + 1) / chunks);
            wait<1>();
        } else {
            wait<0>();
        }
        __syncthreads();
        if (chunk == 0) {
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int j = 0; j < 8; j++)
#pragma unroll
                    for (int e = 0; e < 4; e++) acc[i][j][e] = 0;
        }
        const signed char* as = smem + (step % 2) * STAGE_BYTES;
        const signed char* bs = as + TILE_M * AB_STRIDE;
#pragma unroll
        for (int ks = 0; ks < TILE_K; ks += 32) {
            unsigned a[2][4], b[8][2];
#pragma unroll
            for (int i = 0; i < 2; i++) {
                const signed char* p = as + (wm + i * 16 + g) * AB_STRIDE + ks + t * 4;
                a[i][0] = *(const unsigned*)p;
                a[i][1] = *(const unsigned*)(p + 8 * AB_STRIDE);
                a[i][2] = *(const unsigned*)(p + 16);
                a[i][3] = *(const unsigned*)(p + 8 * AB_STRIDE + 16);
            }
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const signed char* p = bs + (wn + j * 8 + g) * AB_STRIDE + ks + t * 4;
                b[j][0] = *(const unsigned*)p;
                b[j][1] = *(const unsigned*)(p + 16);
            }
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) mma_s8(acc[i][j], a[i], b[j]);
        }
        if (chunk + 1 < chunks) {
            // The next step's load refills this stage.
            __syncthreads();
            continue;
        }

        // The tile's epilogue: each thread reads its residual elements in the tile buffer (they
        // landed with the tile's first chunk) and writes its outputs in their place.
        const long long tile = first + ordinal;
        const int n0 = (int)(tile % col_tiles) * TILE_N;
        const long long m0 = tile / col_tiles * TILE_M;
        signed char* buffer = smem + 2 * STAGE_BYTES + (ordinal % 2) * TILE_BYTES;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int c = wn + j * 8 + t * 2;
            float s0 = scale[n0 + c], s1 = scale[n0 + c + 1], o0 = bias[n0 + c], o1 = bias[n0 + c + 1];
            float q0 = z ? ratio[n0 + c] : 1.0f, q1 = z ? ratio[n0 + c + 1] : 1.0f;
#pragma unroll
            for (int i = 0; i < 2; i++) {
#pragma unroll
                for (int half = 0; half < 2; half++) {
                    signed char* out = buffer + (wm + i * 16 + g + half * 8) * OUT_STRIDE + c;
                    float v0 = (float)acc[i][j][half * 2] * s0 + o0, v1 = (float)acc[i][j][half * 2 + 1] * s1 + o1;
                    if (z) { v0 += (float)out[0]; v1 += (float)out[1]; }
                    if (relu) { v0 = fmaxf(v0, 0.0f); v1 = fmaxf(v1, 0.0f); }
                    *(unsigned short*)out = (unsigned short)((saturate_int8(v0 * q0) & 0xff) | ((saturate_int8(v1 * q1) & 0xff) << 8));
                }
            }
        }
        __syncthreads();
#pragma unroll
        for (int i = 0; i < OUT_GROUPS_PER_THREAD; i++) {
            int group = tid + i * THREADS, row = group / (TILE_N / 16), col = (group % (TILE_N / 16)) * 16;
            if (m0 + row < m) *(uint4*)(y + (m0 + row) * n + n0 + col) = *(const uint4*)(buffer + row * OUT_STRIDE + col);
        }
        // Both the stage and this tile buffer are refilled by coming loads.
        __syncthreads();
    }
}
