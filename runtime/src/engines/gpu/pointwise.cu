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
// A block computes a TILE_M x TILE_N tile with 8 warps (4 along rows, 2 along columns, 32 x 64
// each), reading K in chunks of TILE_K through two shared-memory stages filled by cp.async, so the
// next chunk loads while this one multiplies. The residual tile is fetched the same way first (its
// latency hides behind the products), and the tile goes through shared memory on the way out so
// that global reads and writes are 16 bytes per thread, coalesced.
// Requires k % TILE_K == 0 and n % TILE_N == 0 (the builder offers the kernel only then), and
// POINTWISE_SHARED_BYTES of dynamic shared memory. TILE_M, TILE_N and TILE_K come from exec.rs
// (POINTWISE_TILE), which also computes the shared memory.
#define THREADS 256
// Row strides in shared memory, padded so that each fragment load hits 32 distinct banks.
#define AB_STRIDE (TILE_K + 16)
#define OUT_STRIDE (TILE_N + 16)
#define STAGE_BYTES ((TILE_M + TILE_N) * AB_STRIDE)
// The warps' layout covers 128 x 128; each thread loads the same rows of both operands.
static_assert(TILE_M == 128 && TILE_N == 128 && TILE_K % 32 == 0, "pointwise.cu's tile");
#define POINTWISE_SHARED_BYTES (2 * STAGE_BYTES + TILE_M * OUT_STRIDE)
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

extern "C" __global__ void __launch_bounds__(THREADS, 2) pointwise_conv_int8(
        const signed char* __restrict__ x, const signed char* __restrict__ w, const float* __restrict__ epilogue,
        const signed char* __restrict__ z, signed char* __restrict__ y, long long m, int n, int k, int relu,
        int h, int wd, int ho, int wo, int stride) {
    extern __shared__ __align__(16) signed char smem[];
    signed char* tile = smem + 2 * STAGE_BYTES;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int col_tiles = n / TILE_N;
    const int n0 = (int)(blockIdx.x % col_tiles) * TILE_N;
    const long long m0 = (long long)(blockIdx.x / col_tiles) * TILE_M;
    const int wm = (warp / 2) * 32, wn = (warp % 2) * 64;

    if (z) {
#pragma unroll
        for (int i = 0; i < OUT_GROUPS_PER_THREAD; i++) {
            int group = tid + i * THREADS, row = group / (TILE_N / 16), col = (group % (TILE_N / 16)) * 16;
            bool inside = m0 + row < m;
            copy16(tile + row * OUT_STRIDE + col, z + (inside ? (m0 + row) * n + n0 + col : 0), inside ? 16 : 0);
        }
    }
    // Each thread's operand rows: the input pixel of each (strided for stride 2) and the weight row.
    const signed char* a_src[OPERAND_GROUPS_PER_THREAD];
    const signed char* b_src[OPERAND_GROUPS_PER_THREAD];
    int a_bytes[OPERAND_GROUPS_PER_THREAD], offset[OPERAND_GROUPS_PER_THREAD];
#pragma unroll
    for (int i = 0; i < OPERAND_GROUPS_PER_THREAD; i++) {
        int group = tid + i * THREADS, row = group / (TILE_K / 16), col = (group % (TILE_K / 16)) * 16;
        long long r = m0 + row, pixel = r;
        if (stride != 1) {
            long long b = r / ((long long)ho * wo);
            int p = (int)(r % ((long long)ho * wo));
            pixel = (b * h + (p / wo) * stride) * wd + (p % wo) * stride;
        }
        a_bytes[i] = r < m ? 16 : 0;
        a_src[i] = x + (r < m ? pixel * k + col : 0);
        b_src[i] = w + (long long)(n0 + row) * k + col;
        offset[i] = row * AB_STRIDE + col;
    }
    auto load = [&](int chunk) {
        signed char* as = smem + (chunk % 2) * STAGE_BYTES;
        signed char* bs = as + TILE_M * AB_STRIDE;
        int k0 = chunk * TILE_K;
#pragma unroll
        for (int i = 0; i < OPERAND_GROUPS_PER_THREAD; i++) {
            copy16(as + offset[i], a_src[i] + (a_bytes[i] ? k0 : 0), a_bytes[i]);
            copy16(bs + offset[i], b_src[i] + k0, 16);
        }
        commit();
    };

    int acc[2][8][4];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0;

    const int chunks = k / TILE_K;
    load(0);
    for (int chunk = 0; chunk < chunks; chunk++) {
        if (chunk + 1 < chunks) {
            load(chunk + 1);
            wait<1>();
        } else {
            wait<0>();
        }
        __syncthreads();
        const signed char* as = smem + (chunk % 2) * STAGE_BYTES;
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
        // The next iteration's load refills this stage.
        __syncthreads();
    }

    // The residual landed with the first chunk (groups complete in order). Each thread reads its
    // elements of the tile and writes its outputs in their place.
    const float* scale = epilogue;
    const float* bias = epilogue + n;
    const float* ratio = epilogue + 2 * n;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        int c = wn + j * 8 + t * 2;
        float s0 = scale[n0 + c], s1 = scale[n0 + c + 1], o0 = bias[n0 + c], o1 = bias[n0 + c + 1];
        float q0 = z ? ratio[n0 + c] : 1.0f, q1 = z ? ratio[n0 + c + 1] : 1.0f;
#pragma unroll
        for (int i = 0; i < 2; i++) {
#pragma unroll
            for (int half = 0; half < 2; half++) {
                signed char* out = tile + (wm + i * 16 + g + half * 8) * OUT_STRIDE + c;
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
        if (m0 + row < m) *(uint4*)(y + (m0 + row) * n + n0 + col) = *(const uint4*)(tile + row * OUT_STRIDE + col);
    }
}
