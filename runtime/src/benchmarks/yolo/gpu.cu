// YOLO's ends on the GPU (NVRTC): letterboxed images (RGB, CHW bytes) into the network's input
// (channels-last fp16, `padded` channels, value / 255 as the CPU engine divides it), and per anchor
// of `output0` (f32 [84, A] per image) its box, best class (the first on ties) and that score, so
// six values per anchor come back instead of 84.

// One thread per pixel, blockIdx.y the image: three planar bytes in, `padded` fp16 values out.
extern "C" __global__ void letterboxed_input(const unsigned char* pixels, unsigned short* input, int positions, int padded) {
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= positions) return;
    long long n = blockIdx.y;
    const unsigned char* image = pixels + n * 3 * positions;
    unsigned short* out = input + (n * positions + p) * padded;
    for (int c = 0; c < padded; c++) out[c] = c < 3 ? f2h((float)image[c * positions + p] / 255.0f) : 0;
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
