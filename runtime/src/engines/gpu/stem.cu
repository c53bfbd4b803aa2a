// The image's convolution (ResNet50's stem after network::space_to_depth: KERNEL x KERNEL = 4x4,
// stride 1, no padding, on the image's 12 fp16 channels) on tensor cores (mma.sync m16n8k16 fp16
// with f32 sums, compute capability 8.0 or later), writing int8: the Quantize that the max pooling
// after it carried moves here (network::fuse_conv_quantization), so the pooling reads a quarter of
// the bytes, and no fp16 tensor of the stem's size is written at all.
//
//   y[b][oy][ox][c] = round(max(sum + bias[c], 0) / scale) to nearest even, saturated to [-127, 127]
//   (no max without relu), sum = sum over taps (r, s) and channels i of x[b][oy + r][ox + s][i] w[c][r][s][i].
//
// Rows of the product are positions on the input's grid, v = oy * w + ox (the w - wo columns past
// the output's edge are computed and dropped, 3 in 115 for ResNet50), so that kernel row r of rows
// v .. v + 255 reads the contiguous run of input pixels from v + r * w: a block copies one run of
// TILE_M + (KERNEL - 1) * (w + 1) pixels (the "patch") into shared memory per tile and every
// operand row is in it. A position's kernel row is KERNEL pixels of 12 channels, 48 consecutive
// values: KSTEPS = 3 k-steps of 16 with no padding channel multiplied (16-channel pixels wasted a
// quarter of the products). Pixels are 24 bytes, so operand rows are 8-byte aligned only and the
// fragments load by 8-byte shared loads instead of ldmatrix: a lane takes values 4t .. 4t + 3 of a
// k-step, which mma's k order sees as 2t, 2t + 1, 2t + 8, 2t + 9 (the same permutation in both
// operands leaves the products' sums unchanged); a fragment's rows g are every fourth position, so
// that each half-warp's loads hit 32 distinct banks. The weights (64 output channels) stay in
// shared memory for the block's TILES_PER_BLOCK tiles, whose patches load, double buffered, while
// the tile before multiplies. 8 warps of 64 rows x 32 channels; the epilogue goes through shared
// memory in fragment order, and the write-out maps each row back to its position, so that writes
// are 16 bytes per thread, coalesced, valid rows only. Requires output channels a multiple of 64
// (blockIdx.y picks 64 of them) and the dynamic shared memory stem.rs computes
// (TILE_N * WEIGHT_STRIDE + 2 * patch buffer + TILE_M * OUT_STRIDE).
#define THREADS 256
#define TILE_M 256
#define TILE_N 64
#define CHANNELS 12
#define PIXEL_BYTES (CHANNELS * 2)
// One position's kernel row: KERNEL pixels.
#define ROW_BYTES (KERNEL * PIXEL_BYTES)
#define KSTEPS (KERNEL * CHANNELS / 16)
// Row strides of the weights (104 words: rows g .. g + 3 of a half-warp's loads start 8 banks
// apart) and of the output tile (rows g .. g + 7 of a store start on distinct banks).
#define WEIGHT_STRIDE (KERNEL * ROW_BYTES + 32)
#define OUT_STRIDE (TILE_N + 16)
static_assert(KERNEL * CHANNELS % 16 == 0, "a kernel row must be whole k-steps");

__device__ __forceinline__ void mma_f16(float* c, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// An fp16 value (its bits) as a float.
__device__ __forceinline__ float half_to_float(unsigned short bits) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
    return f;
}

// What a patch load needs: the images, their size, tiles per image and in all.
struct Stem {
    const signed char* x;
    long long image_bytes;
    int tiles_per_image;
    long long tiles;
};

// Starts copying tile `tile`'s patch into `buffer` and returns where in it the patch begins. The
// copies are 16 bytes from the 16-byte boundary at or before the patch's first byte (an image of
// 24-byte pixels starts 8 bytes past one when its number is odd), zeros past the image's last byte.
__device__ __forceinline__ const signed char* load_patch(const Stem& s, signed char* buffer, long long tile, int patch_bytes) {
    const signed char* image = s.x + tile / s.tiles_per_image * s.image_bytes;
    const signed char* start = image + (tile % s.tiles_per_image) * (TILE_M * PIXEL_BYTES);
    const int skew = (int)((unsigned long long)start % 16);
    const signed char* from = start - skew;
    const long long left = image + s.image_bytes - from;
    for (int chunk = threadIdx.x; chunk * 16 < skew + patch_bytes; chunk += THREADS) {
        const long long rest = left - chunk * 16;
        const int bytes = rest >= 16 ? 16 : rest > 0 ? (int)rest : 0;
        copy16(buffer + chunk * 16, from + (bytes > 0 ? chunk * 16 : 0), bytes);
    }
    return buffer + skew;
}

// 8 bytes of shared memory (8-byte aligned) as two registers.
__device__ __forceinline__ uint2 load8(const signed char* p) { return *(const uint2*)p; }

extern "C" __global__ void __launch_bounds__(THREADS, 2) stem_conv(
        const signed char* __restrict__ x, const signed char* __restrict__ weights, const unsigned short* __restrict__ bias,
        signed char* __restrict__ y, int n, int h, int w, int ho, int wo, int relu, float scale) {
    extern __shared__ __align__(16) signed char smem[];
    const int cout = gridDim.y * TILE_N, n0 = blockIdx.y * TILE_N;
    const int tiles_per_image = (ho * w + TILE_M - 1) / TILE_M;
    const Stem s = {x, (long long)h * w * PIXEL_BYTES, tiles_per_image, (long long)n * tiles_per_image};
    const int patch_bytes = (TILE_M + (KERNEL - 1) * (w + 1)) * PIXEL_BYTES;
    // A patch buffer: the patch, up to 8 bytes of skew before it, whole 16-byte copies.
    const int buffer_bytes = (patch_bytes + 8 + 15) / 16 * 16;
    signed char* wsm = smem;
    signed char* buffers = wsm + TILE_N * WEIGHT_STRIDE;
    signed char* out = buffers + 2 * buffer_bytes;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int wm = (warp / 2) * 64, wn = (warp % 2) * 32;
    const long long first = (long long)blockIdx.x * TILES_PER_BLOCK;
    const int count = (int)min((long long)TILES_PER_BLOCK, s.tiles - first);
    const float inverse = 1.0f / scale;

    // The block's 64 output channels' weights, with the first patch.
    const int row_chunks = KERNEL * ROW_BYTES / 16;
    for (int chunk = tid; chunk < TILE_N * row_chunks; chunk += THREADS) {
        const int row = chunk / row_chunks, col = chunk % row_chunks * 16;
        copy16(wsm + row * WEIGHT_STRIDE + col, weights + (long long)(n0 + row) * KERNEL * ROW_BYTES + col, 16);
    }
    const signed char* next = load_patch(s, buffers, first, patch_bytes);
    commit();
    // This lane's operand bytes: A fragment i's row g is position (i / 2) * 32 + (i % 2) * 2 + 4g
    // of the warp's 64 (row g + 8 the one after it); B's row g is output channel g of each 8.
    const int a_lane = (wm + 4 * g) * PIXEL_BYTES + t * 8;
    const int b_lane = (wn + g) * WEIGHT_STRIDE + t * 8;
    float bias0[4], bias1[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int c = n0 + wn + j * 8 + t * 2;
        bias0[j] = half_to_float(bias[c]);
        bias1[j] = half_to_float(bias[c + 1]);
    }

    for (int ordinal = 0; ordinal < count; ordinal++) {
        const signed char* patch = next;
        if (ordinal + 1 < count) {
            next = load_patch(s, buffers + ((ordinal + 1) % 2) * buffer_bytes, first + ordinal + 1, patch_bytes);
            commit();
            wait<1>();
        } else {
            wait<0>();
        }
        __syncthreads();
        float acc[4][4][4];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;
#pragma unroll
        for (int r = 0; r < KERNEL; r++)
#pragma unroll
            for (int q = 0; q < KSTEPS; q++) {
                unsigned a[4][4], b[4][2];
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const signed char* p = patch + a_lane + ((i / 2) * 32 + (i % 2) * 2 + r * w) * PIXEL_BYTES + q * 32;
                    const uint2 row = load8(p), below = load8(p + PIXEL_BYTES);
                    a[i][0] = row.x;
                    a[i][1] = below.x;
                    a[i][2] = row.y;
                    a[i][3] = below.y;
                }
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const uint2 v = load8(wsm + b_lane + j * 8 * WEIGHT_STRIDE + r * ROW_BYTES + q * 32);
                    b[j][0] = v.x;
                    b[j][1] = v.y;
                }
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++) mma_f16(acc[i][j], a[i], b[j]);
            }

        // Epilogue into the output tile in fragment order (row wm + i * 16 + half * 8 + g): this
        // thread's channels c, c + 1 of each j.
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int half = 0; half < 2; half++) {
                    float v0 = acc[i][j][half * 2] + bias0[j], v1 = acc[i][j][half * 2 + 1] + bias1[j];
                    if (relu) { v0 = fmaxf(v0, 0.0f); v1 = fmaxf(v1, 0.0f); }
                    const int row = wm + i * 16 + half * 8 + g, col = wn + j * 8 + t * 2;
                    *(unsigned short*)(out + row * OUT_STRIDE + col) = (unsigned short)__byte_perm(int8_bits(v0 * inverse), int8_bits(v1 * inverse), 0x0040);
                }
        __syncthreads();
        const long long tile = first + ordinal, b = tile / tiles_per_image;
        const int v0 = (int)(tile % tiles_per_image) * TILE_M;
#pragma unroll
        for (int k = 0; k < TILE_M * TILE_N / 16 / THREADS; k++) {
            const int group = tid + k * THREADS, row = group / (TILE_N / 16), col = group % (TILE_N / 16) * 16;
            // The row's position: f = i * 16 + half * 8 + g within its warp's 64.
            const int f = row % 64, position = row - f + f / 32 * 32 + f / 16 % 2 * 2 + f % 8 * 4 + f / 8 % 2;
            const int v = v0 + position, oy = v / w, ox = v % w;
            if (oy < ho && ox < wo) *(uint4*)(y + ((b * ho + oy) * wo + ox) * cout + n0 + col) = *(const uint4*)(out + row * OUT_STRIDE + col);
        }
        // The next patch load and epilogue reuse these buffers.
        __syncthreads();
    }
}
