// YOLO's ends on the GPU (NVRTC): letterboxed images (RGB, CHW bytes) into the network's input
// (channels-last fp16, `padded` channels, value / 255 as the CPU engine divides it), and the
// detection head's decoding from the network's three level outputs, into output0 or, for NMS, six
// values per anchor (its box, best class and that score) instead of 84.

// One thread per pixel, blockIdx.y the image, whose bytes start at images[blockIdx.y] (the slot's
// upload or the resident pool: `start_from_device`): three planar bytes in, `padded` fp16 values
// out (a multiple of 8: 16-byte stores, the first holding the three channels).
extern "C" __global__ void letterboxed_input(const unsigned long long* images, unsigned short* input, int positions, int padded) {
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= positions) return;
    const unsigned char* image = reinterpret_cast<const unsigned char*>(images[blockIdx.y]);
    uint4* out = reinterpret_cast<uint4*>(input + ((long long)blockIdx.y * positions + p) * padded);
    unsigned int r = f2h((float)image[p] / 255.0f), g = f2h((float)image[positions + p] / 255.0f), b = f2h((float)image[2 * positions + p] / 255.0f);
    out[0] = make_uint4(r | (g << 16), b, 0, 0);
    for (int v = 1; v < padded / 8; v++) out[v] = make_uint4(0, 0, 0, 0);
}

// The 8 fp16 values of a 16-byte word.
__device__ __forceinline__ void unpack8(uint4 w, float* v) {
    unsigned int u[4] = {w.x, w.y, w.z, w.w};
    for (int k = 0; k < 4; k++) {
        v[2 * k] = h2f((unsigned short)(u[k] & 0xffff));
        v[2 * k + 1] = h2f((unsigned short)(u[k] >> 16));
    }
}

// The detection head after its convolutions, one thread per anchor: the anchor's row of its level
// (fp16 channels-last, `row` values apart, 16-byte aligned: 4 x REG_MAX DFL logits, then the class
// logits) decoded as the exported head computes output0. Each side's distance is the expectation
// of the softmax over its bins (the DFL's 1x1 convolution of weights 0..15); the anchor is the
// cell's centre in grid units; the box is (x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1 times the
// level's stride; the scores are the class logits' sigmoids. `whole`: output0's f32 [4 + classes, A]
// per image; else six values per anchor, the box, the best score (the first class on ties) and its
// class, which is all NMS reads. Levels are the anchors' order: side0^2, then side1^2, side2^2.
#define REG_MAX 16
extern "C" __global__ void decode_levels(const unsigned short* l0, const unsigned short* l1, const unsigned short* l2, int row0, int row1, int row2, int side0, int side1,
                                         int side2, int size, int classes, int anchors, long long total, float* out, int whole) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= total) return;
    long long n = i / anchors;
    int a = (int)(i % anchors);
    int first = side0 * side0, second = first + side1 * side1;
    const unsigned short* level = a < first ? l0 : a < second ? l1 : l2;
    int row = a < first ? row0 : a < second ? row1 : row2, side = a < first ? side0 : a < second ? side1 : side2;
    int p = a < first ? a : a < second ? a - first : a - second;
    const uint4* x = reinterpret_cast<const uint4*>(level + (n * side * side + p) * (long long)row);
    float d[4];
    for (int k = 0; k < 4; k++) {
        float v[REG_MAX];
        unpack8(x[2 * k], v);
        unpack8(x[2 * k + 1], v + 8);
        float m = v[0], sum = 0.0f, e = 0.0f;
        for (int j = 1; j < REG_MAX; j++) m = fmaxf(m, v[j]);
        for (int j = 0; j < REG_MAX; j++) {
            v[j] = expf(v[j] - m);
            sum += v[j];
        }
        for (int j = 0; j < REG_MAX; j++) e += v[j] / sum * (float)j;
        d[k] = e;
    }
    float ax = (float)(p % side) + 0.5f, ay = (float)(p / side) + 0.5f, stride = (float)(size / side);
    float x1 = ax - d[0], y1 = ay - d[1], x2 = ax + d[2], y2 = ay + d[3];
    float box[4] = {(x1 + x2) / 2.0f * stride, (y1 + y2) / 2.0f * stride, (x2 - x1) * stride, (y2 - y1) * stride};
    float* image = out + n * (4 + classes) * (long long)anchors;
    if (whole)
        for (int r = 0; r < 4; r++) image[r * (long long)anchors + a] = box[r];
    int best = 0;
    float score = -1.0f;
    for (int c0 = 0; c0 < classes; c0 += 8) {
        float v[8];
        unpack8(x[(4 * REG_MAX + c0) / 8], v);
        for (int k = 0; k < 8 && c0 + k < classes; k++) {
            float s = 1.0f / (1.0f + expf(-v[k]));
            if (whole) image[(4 + c0 + k) * (long long)anchors + a] = s;
            if (s > score) {
                best = c0 + k;
                score = s;
            }
        }
    }
    if (!whole) {
        float* o = out + i * 6;
        for (int r = 0; r < 4; r++) o[r] = box[r];
        o[4] = score;
        o[5] = (float)best;
    }
}
