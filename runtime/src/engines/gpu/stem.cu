// The image's convolution (ResNet50's stem after network::space_to_depth: 4x4, stride 1, no
// padding, on 16 fp16 channels, 12 of them the image's) on tensor cores (mma.sync m16n8k16 fp16
// with f32 sums, compute capability 8.0 or later), writing int8: the Quantize that the max pooling
// after it carried moves here (network::fuse_conv_quantization), so the pooling reads a quarter of
// the bytes, and no fp16 tensor of the stem's size is written at all.
//
//   y[b][oy][ox][c] = round(max(sum + bias[c], 0) / scale) to nearest even, saturated to [-127, 127]
//   (no max without relu), sum = sum over taps (r, s) and channels i of x[b][oy + r][ox + s][i] w[c][r][s][i].
//
// Rows of the product are positions on the input's grid, v = oy * w + ox (the w - wo columns past
// the output's edge are computed and dropped, 3 in 115 for ResNet50), so that tap (r, s) of rows
// v .. v + 255 is the contiguous run of input pixels from v + r * w + s: a block copies one run of
// TILE_M + (R - 1) * w + R - 1 pixels (the "patch") into shared memory per tile and every tap's
// operand rows are in it. A pixel's 32 bytes are stored with its two 16-byte halves swapped in
// every other group of 4 pixels, so that ldmatrix's 8 rows of 16 bytes (8 consecutive pixels) hit
// distinct banks wherever they start. The weights (64 output channels, R * R taps of 16 channels)
// stay in shared memory for the block's TILES_PER_BLOCK tiles, whose patches load, double
// buffered, while the tile before multiplies. 8 warps of 64 rows x 32 channels; the epilogue goes
// through shared memory so that writes are 16 bytes per thread, coalesced, valid rows only.
// Requires 16 input channels, output channels a multiple of 64 (blockIdx.y picks 64 of them), and
// the dynamic shared memory stem.rs computes (WEIGHT_BYTES + 2 * PATCH_BYTES + OUT_BYTES).
#define THREADS 256
#define TILE_M 256
#define TILE_N 64
#define PIXEL_BYTES 32
// Row strides of the weights and of the output tile, padded so that fragment loads hit 32 banks.
#define OUT_STRIDE (TILE_N + 16)

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

// Byte offset of half `half` of patch pixel `pixel` (the swizzle above).
__device__ __forceinline__ int patch_offset(int pixel, int half) { return pixel * PIXEL_BYTES + ((half ^ (pixel >> 2)) & 1) * 16; }

// What a patch load needs: the images, pixels per image, tiles per image and in all.
struct Stem {
    const signed char* x;
    int pixels, tiles_per_image;
    long long tiles;
};

// Starts copying tile `tile`'s patch into `patch` (zeros past the image's last pixel).
__device__ __forceinline__ void load_patch(const Stem& s, signed char* patch, long long tile, int patch_pixels) {
    const long long b = tile / s.tiles_per_image;
    const int first = (int)(tile % s.tiles_per_image) * TILE_M, pixels = s.pixels;
    const signed char* image = s.x + b * pixels * PIXEL_BYTES;
    for (int chunk = threadIdx.x; chunk < patch_pixels * 2; chunk += THREADS) {
        const int pixel = chunk / 2, half = chunk % 2;
        const bool inside = first + pixel < pixels;
        copy16(patch + patch_offset(pixel, half), image + (inside ? (long long)(first + pixel) * PIXEL_BYTES + half * 16 : 0), inside ? 16 : 0);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 2) stem_conv(
        const signed char* __restrict__ x, const signed char* __restrict__ weights, const unsigned short* __restrict__ bias,
        signed char* __restrict__ y, int n, int h, int w, int ho, int wo, int kernel, int relu, float scale) {
    extern __shared__ __align__(16) signed char smem[];
    const int taps = kernel * kernel, weight_stride = taps * PIXEL_BYTES + 16, cout = gridDim.y * TILE_N, n0 = blockIdx.y * TILE_N;
    const int tiles_per_image = (ho * w + TILE_M - 1) / TILE_M;
    const Stem s = {x, h * w, tiles_per_image, (long long)n * tiles_per_image};
    const int patch_pixels = TILE_M + (kernel - 1) * w + kernel - 1;
    signed char* wsm = smem;
    signed char* patches = wsm + TILE_N * weight_stride;
    signed char* out = patches + 2 * patch_pixels * PIXEL_BYTES;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int wm = (warp / 2) * 64, wn = (warp % 2) * 32;
    const long long first = (long long)blockIdx.x * TILES_PER_BLOCK;
    const int count = (int)min((long long)TILES_PER_BLOCK, s.tiles - first);
    const float inverse = 1.0f / scale;

    // The block's 64 output channels' weights, with the first patch.
    const int weight_chunks = TILE_N * taps * PIXEL_BYTES / 16, row_chunks = taps * PIXEL_BYTES / 16;
    for (int chunk = tid; chunk < weight_chunks; chunk += THREADS) {
        const int row = chunk / row_chunks, col = chunk % row_chunks * 16;
        copy16(wsm + row * weight_stride + col, weights + (long long)(n0 + row) * taps * PIXEL_BYTES + col, 16);
    }
    load_patch(s, patches, first, patch_pixels);
    commit();
    // Lane roles in ldmatrix: A's matrices are (rows 0-7, 8-15) x (channels 0-7, 8-15), the
    // fragments a[0..3]; B's are (channels 0-7, 8-15) x (output channels j, j + 8).
    const int a_row = lane % 8 + (lane / 8 % 2) * 8, a_half = lane / 16;
    const int b_lane = ((lane / 16) * 8 + lane % 8) * weight_stride + (lane / 8 % 2) * 16;
    float bias0[4], bias1[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int c = n0 + wn + j * 8 + t * 2;
        bias0[j] = half_to_float(bias[c]);
        bias1[j] = half_to_float(bias[c + 1]);
    }

    for (int ordinal = 0; ordinal < count; ordinal++) {
        if (ordinal + 1 < count) {
            load_patch(s, patches + ((ordinal + 1) % 2) * patch_pixels * PIXEL_BYTES, first + ordinal + 1, patch_pixels);
            commit();
            wait<1>();
        } else {
            wait<0>();
        }
        __syncthreads();
        const signed char* patch = patches + (ordinal % 2) * patch_pixels * PIXEL_BYTES;
        float acc[4][4][4];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;
        for (int tap = 0; tap < taps; tap++) {
            const int shift = (tap / kernel) * w + tap % kernel;
            unsigned a[4][4], b[4][2];
#pragma unroll
            for (int i = 0; i < 4; i++) load_matrices(a[i], patch + patch_offset(wm + i * 16 + a_row + shift, a_half));
#pragma unroll
            for (int j = 0; j < 4; j += 2) {
                unsigned r[4];
                load_matrices(r, wsm + (wn + j * 8) * weight_stride + tap * PIXEL_BYTES + b_lane);
                b[j][0] = r[0];
                b[j][1] = r[1];
                b[j + 1][0] = r[2];
                b[j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) mma_f16(acc[i][j], a[i], b[j]);
        }

        // Epilogue into the output tile: this thread's channels c, c + 1 of each j, rows g and g + 8
        // of each i.
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int half = 0; half < 2; half++) {
                    float v0 = acc[i][j][half * 2] + bias0[j], v1 = acc[i][j][half * 2 + 1] + bias1[j];
                    if (relu) { v0 = fmaxf(v0, 0.0f); v1 = fmaxf(v1, 0.0f); }
                    const int row = wm + i * 16 + g + half * 8, col = wn + j * 8 + t * 2;
                    *(unsigned short*)(out + row * OUT_STRIDE + col) = (unsigned short)__byte_perm(int8_bits(v0 * inverse), int8_bits(v1 * inverse), 0x0040);
                }
        __syncthreads();
        const long long tile = first + ordinal, b = tile / tiles_per_image;
        const int v0 = (int)(tile % tiles_per_image) * TILE_M;
#pragma unroll
        for (int k = 0; k < TILE_M * TILE_N / 16 / THREADS; k++) {
            const int group = tid + k * THREADS, row = group / (TILE_N / 16), col = group % (TILE_N / 16) * 16;
            const int v = v0 + row, oy = v / w, ox = v % w;
            if (oy < ho && ox < wo) *(uint4*)(y + ((b * ho + oy) * wo + ox) * cout + n0 + col) = *(const uint4*)(out + row * OUT_STRIDE + col);
        }
        // The next patch load and epilogue reuse these buffers.
        __syncthreads();
    }
}
