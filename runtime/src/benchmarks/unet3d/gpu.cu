// 3D-UNet's sliding windows on the GPU (NVRTC): gather a window of the volume into the network's
// input (channels-last fp16, `padded` channels, the CT value in channel 0), accumulate a window's
// logits times the Gaussian importance map into f32 sums with the weights alongside (one window per
// launch, in the reference's window order, so every voxel sums as the CPU engine sums it), and
// the arg-max of the weighted means (the first class on ties).

extern "C" __global__ void gather_window(const float* volume, unsigned short* input, int h, int w, int roi, int padded,
                                         int z, int y, int x) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long cube = (long long)roi * roi * roi;
    if (i >= cube * padded) return;
    int c = (int)(i % padded);
    long long v = i / padded;
    int a = (int)(v / ((long long)roi * roi)), b = (int)((v / roi) % roi), e = (int)(v % roi);
    float value = c == 0 ? volume[((long long)(z + a) * h + y + b) * w + x + e] : 0.0f;
    input[i] = f2h(value);
}

extern "C" __global__ void accumulate_window(const unsigned short* logits, const float* importance, float* sums, float* weights,
                                             long long voxels, int h, int w, int roi, int padded, int z, int y, int x) {
    long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long cube = (long long)roi * roi * roi;
    if (v >= cube) return;
    int a = (int)(v / ((long long)roi * roi)), b = (int)((v / roi) % roi), e = (int)(v % roi);
    long long g = ((long long)(z + a) * h + y + b) * w + x + e;
    float weight = importance[v];
    weights[g] += weight;
    for (int k = 0; k < 3; k++) sums[k * voxels + g] += h2f(logits[v * padded + k]) * weight;
}

extern "C" __global__ void arg_max(const float* sums, const float* weights, unsigned char* labels, long long voxels) {
    long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (v >= voxels) return;
    int best = 0;
    for (int k = 1; k < 3; k++)
        if (sums[k * voxels + v] / weights[v] > sums[best * voxels + v] / weights[v]) best = k;
    labels[v] = (unsigned char)best;
}
