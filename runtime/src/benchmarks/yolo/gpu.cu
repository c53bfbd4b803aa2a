// YOLO's ends on the GPU (NVRTC): letterboxed images (RGB, CHW bytes) into the network's input
// (channels-last fp16, `padded` channels, value / 255 as the CPU engine divides it), and per anchor
// of `output0` (f32 [84, A] per image) its box, best class (the first on ties) and that score, so
// six values per anchor come back instead of 84.

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

extern "C" __global__ void best_class(const float* output, float* anchors_out, int anchors, int classes, long long total) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= total) return;
    long long n = i / anchors;
    int a = (int)(i % anchors);
    const float* image = output + n * (4 + classes) * (long long)anchors;
    int best = 0;
    float score = image[4 * anchors + a];
    for (int c = 1; c < classes; c++) {
        float s = image[(4 + c) * anchors + a];
        if (s > score) { best = c; score = s; }
    }
    float* out = anchors_out + i * 6;
    for (int r = 0; r < 4; r++) out[r] = image[r * anchors + a];
    out[4] = score;
    out[5] = (float)best;
}
