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
// TILES_PER_BLOCK come from pointwise.rs (TILE), which also computes the shared memory.
//
// The epilogue converts between integers and floats by float arithmetic, not by conversion
// instructions: those issue at 16 per clock per SM against 128 for float adds, and the kernel is
// bound by instruction issue, not bandwidth (ncu on an H100: DRAM at 56 % of peak on stage 1).
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

// An int32 sum as a float, exactly, for |sum| < 2^22.
__device__ __forceinline__ float small_int_to_float(int v) { return __int_as_float(v + ROUNDER_BITS) - ROUNDER; }

// The two int8 values of a 16-bit word as floats: each byte, offset by 128 to be unsigned, becomes
// the low mantissa byte of 2^23.
__device__ __forceinline__ float2 int8_pair_to_float(unsigned short pair) {
    const unsigned biased = pair ^ 0x8080u;
    return make_float2(__uint_as_float(__byte_perm(biased, 0x4B000000u, 0x7540)) - 8388736.0f,
                       __uint_as_float(__byte_perm(biased, 0x4B000000u, 0x7541)) - 8388736.0f);
}

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

// Writes a tile's outputs into its buffer, over its residual (which landed with the tile's first
// chunk): this thread's columns c and c + 1 for each j, at rows g and g + 8 of each i.
template <bool SMALL_SUMS, bool RESIDUAL, bool RELU>
__device__ __forceinline__ void epilogue_tile(const int (&acc)[2][8][4], signed char* buffer, const float* epilogue, int n, int n0, int wm, int wn, int g, int t) {
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const int c = n0 + wn + j * 8 + t * 2;
        const float2 scale = *(const float2*)(epilogue + c), bias = *(const float2*)(epilogue + n + c);
        const float2 ratio = RESIDUAL ? *(const float2*)(epilogue + 2 * n + c) : make_float2(1.0f, 1.0f);
#pragma unroll
        for (int i = 0; i < 2; i++) {
#pragma unroll
            for (int half = 0; half < 2; half++) {
                unsigned short* out = (unsigned short*)(buffer + (wm + i * 16 + g + half * 8) * OUT_STRIDE + c - n0);
                const int* sums = acc[i][j] + half * 2;
                const float u0 = SMALL_SUMS ? small_int_to_float(sums[0]) : (float)sums[0];
                const float u1 = SMALL_SUMS ? small_int_to_float(sums[1]) : (float)sums[1];
                float v0 = u0 * scale.x + bias.x, v1 = u1 * scale.y + bias.y;
                if (RESIDUAL) {
                    const float2 r = int8_pair_to_float(*out);
                    v0 += r.x;
                    v1 += r.y;
                }
                if (RELU) { v0 = fmaxf(v0, 0.0f); v1 = fmaxf(v1, 0.0f); }
                if (RESIDUAL) { v0 *= ratio.x; v1 *= ratio.y; }
                *out = (unsigned short)__byte_perm(int8_bits(v0), int8_bits(v1), 0x0040);
            }
        }
    }
}
// One case of the kernel's switch over the 8 variants: the layer's choices are uniform, and as
// per-element selects and predicates they would issue for every output.
#define EPILOGUE(V) \
    case V: epilogue_tile<((V) & 4) != 0, ((V) & 2) != 0, ((V) & 1) != 0>(acc, buffer, epilogue, n, n0, wm, wn, g, t); break;

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
    // The epilogue's variant (see EPILOGUE); sums of k products of int8 values stay below 2^22
    // in magnitude up to k = 256.
    const int variant = (k <= 256 ? 4 : 0) | (z ? 2 : 0) | (relu ? 1 : 0);
    // Lane offsets of the rows ldmatrix reads: A's four matrices are (rows 0-7, 8-15) x (bytes
    // 0-15, 16-31), the fragments a[0..3]; B's are (bytes 0-15, 16-31) x (columns j, j + 1).
    const int a_lane = ((lane % 8) + (lane / 8 % 2) * 8) * AB_STRIDE + lane / 16 * 16;
    const int b_lane = (lane / 16 * 8 + lane % 8) * AB_STRIDE + lane / 8 % 2 * 16;

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
            for (int i = 0; i < 2; i++) load_matrices(a[i], as + (wm + i * 16) * AB_STRIDE + ks + a_lane);
#pragma unroll
            for (int j = 0; j < 8; j += 2) load_matrices(b[j], bs + (wn + j * 8) * AB_STRIDE + ks + b_lane);
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

        // The tile's epilogue, into the tile buffer; then the buffer's rows go out.
        const long long tile = first + ordinal;
        const int n0 = (int)(tile % col_tiles) * TILE_N;
        const long long m0 = tile / col_tiles * TILE_M;
        signed char* buffer = smem + 2 * STAGE_BYTES + (ordinal % 2) * TILE_BYTES;
        switch (variant) {
            EPILOGUE(0) EPILOGUE(1) EPILOGUE(2) EPILOGUE(3) EPILOGUE(4) EPILOGUE(5) EPILOGUE(6) EPILOGUE(7)
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
