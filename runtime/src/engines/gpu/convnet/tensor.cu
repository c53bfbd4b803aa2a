// The convnet engine's tensor ops (`tensor.rs`), compiled after kernels.cu (half8, act). Images are
// fp16 channels-last with padded rows (a multiple of 8); dense values f32 in the logical order.

// Where vector i (8 channels) of a batch of d x h x w images with `per_row` vectors per position
// lies: its position p, its vector v in the row, its sample s and z, y, x in it. In 32 bits where
// the batch has under 2^31 vectors (`total`): 64-bit divisions are emulated and were most of the
// time of these copies (YOLO's 40 -> 80 upsampling at batch 64: 341 us).
struct Where { long long p, s; int v, z, y, x; };
template <typename I>
__device__ __forceinline__ Where locate_in(I i, int per_row, int d, int h, int w) {
    Where at;
    I p = i / per_row;
    at.v = (int)(i - p * per_row);
    I q = p / w;
    at.x = (int)(p - q * w);
    I r = q / h;
    at.y = (int)(q - r * h);
    I s = r / d;
    at.z = (int)(r - s * d);
    at.p = p;
    at.s = s;
    return at;
}
__device__ __forceinline__ Where locate(long long i, long long total, int per_row, int d, int h, int w) {
    return total <= 2147483647LL ? locate_in<int>((int)i, per_row, d, h, w) : locate_in<long long>(i, per_row, d, h, w);
}

// Max pooling over up to 3 spatial dims (2-D: depth 1), 8 channels per thread; padding is -inf.
// Positions are `x_row` / `y_row` elements apart (the channels, or a wider value's rows).
extern "C" __global__ void max_pool(const unsigned short* x, unsigned short* y, int n, int channels, int x_row, int y_row, int id, int ih, int iw, int od, int oh, int ow,
                                    int kd, int kh, int kw, int sd, int sh, int sw, int pd, int ph, int pw) {
    int per_row = channels / 8;
    long long total = (long long)n * od * oh * ow * per_row;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        Where at = locate(i, total, per_row, od, oh, ow);
        float m[8];
        for (int k = 0; k < 8; k++) m[k] = -3.0e38f;
        for (int a = 0; a < kd; a++) {
            int z = at.z * sd - pd + a;
            if (z < 0 || z >= id) continue;
            for (int b = 0; b < kh; b++) {
                int yy = at.y * sh - ph + b;
                if (yy < 0 || yy >= ih) continue;
                for (int c = 0; c < kw; c++) {
                    int xx = at.x * sw - pw + c;
                    if (xx < 0 || xx >= iw) continue;
                    half8 h = load8(x + (((at.s * id + z) * ih + yy) * iw + xx) * x_row + at.v * 8);
                    for (int k = 0; k < 8; k++) m[k] = fmaxf(m[k], h2f(h.h[k]));
                }
            }
        }
        half8 out;
        for (int k = 0; k < 8; k++) out.h[k] = f2h(m[k]);
        store8(y + at.p * y_row + at.v * 8, out);
    }
}

// Nearest upsampling by integer factors (asymmetric: source = destination / factor); rows as max_pool's.
extern "C" __global__ void upsample(const unsigned short* x, unsigned short* y, int n, int channels, int x_row, int y_row, int id, int ih, int iw, int fd, int fh, int fw) {
    int per_row = channels / 8;
    int od = id * fd, oh = ih * fh, ow = iw * fw;
    long long total = (long long)n * od * oh * ow * per_row;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        Where at = locate(i, total, per_row, od, oh, ow);
        store8(y + at.p * y_row + at.v * 8, load8(x + (((at.s * id + at.z / fd) * ih + at.y / fh) * iw + at.x / fw) * x_row + at.v * 8));
    }
}

// Space-to-depth of an image of C <= 4 channels (a stem's input; rows of `x_row`, a multiple of 8):
// y[s, Y, X, (sy * 2 + sx) * C + c] = x[s, 2Y - py + sy, 2X - px + sx, c], zero outside the image
// and on y's padding channels (y's rows: 8 or 16 values). One thread per output position: its four
// pixels are 16-byte loads, its row one or two 16-byte stores. C is a template parameter so that
// the gathered values stay in registers.
template <int C>
__device__ __forceinline__ void space_to_depth_at(const unsigned short* x, unsigned short* y, int i, int h, int w, int oh, int ow, int py, int px, int x_row, int y_row) {
    int ox = i % ow, t = i / ow;
    int oy = t % oh, s = t / oh;
    half8 lo, hi;
#pragma unroll
    for (int k = 0; k < 8; k++) lo.h[k] = hi.h[k] = 0;
#pragma unroll
    for (int sub = 0; sub < 4; sub++) {
        int iy = 2 * oy - py + sub / 2, ix = 2 * ox - px + sub % 2;
        if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
        half8 p = load8(x + ((long long)(s * h + iy) * w + ix) * x_row);
#pragma unroll
        for (int c = 0; c < C; c++) {
            int j = sub * C + c;
            if (j < 8) lo.h[j] = p.h[c];
            else hi.h[j - 8] = p.h[c];
        }
    }
    unsigned short* out = y + (long long)i * y_row;
    store8(out, lo);
    if (y_row > 8) store8(out + 8, hi);
}

extern "C" __global__ void space_to_depth(const unsigned short* x, unsigned short* y, int total, int channels, int h, int w, int oh, int ow, int py, int px, int x_row, int y_row) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        switch (channels) {
        case 1: space_to_depth_at<1>(x, y, i, h, w, oh, ow, py, px, x_row, y_row); break;
        case 2: space_to_depth_at<2>(x, y, i, h, w, oh, ow, py, px, x_row, y_row); break;
        case 3: space_to_depth_at<3>(x, y, i, h, w, oh, ow, py, px, x_row, y_row); break;
        default: space_to_depth_at<4>(x, y, i, h, w, oh, ow, py, px, x_row, y_row); break;
        }
    }
}

// y = a + b over `positions` rows of `channels` (images of one shape), each operand's rows its
// own width apart.
extern "C" __global__ void image_add(const unsigned short* a, const unsigned short* b, unsigned short* y, long long positions, int channels, int a_row, int b_row, int y_row) {
    int per_row = channels / 8;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < positions * per_row; i += (long long)gridDim.x * blockDim.x) {
        long long p = i / per_row;
        int c = (int)(i % per_row) * 8;
        half8 u = load8(a + p * a_row + c), w = load8(b + p * b_row + c);
        for (int k = 0; k < 8; k++) u.h[k] = f2h(h2f(u.h[k]) + h2f(w.h[k]));
        store8(y + p * y_row + c, u);
    }
}

// Per sample, over the `count` indices of `table`'s dims: y[y0 + i.ys] = x[x0 + i.xs]
// (table: dims, x strides, y strides, x offset, y offset; `rank` of each, at most COPY_MAX_RANK).
// The time goes to the index arithmetic, a division per dim and element: the table is read once per
// block into shared memory, and tensors under 2^31 values take `strided_copy32`, whose 32-bit
// divisions cost a fraction of the emulated 64-bit ones.
#define COPY_MAX_RANK 8
template <typename I>
__device__ __forceinline__ void strided_copy_of(const float* x, float* y, const long long* table, int rank, I count, I x_sample, I y_sample, int n) {
    __shared__ I t[3 * COPY_MAX_RANK + 2];
    for (int k = threadIdx.x; k < 3 * rank + 2; k += blockDim.x) t[k] = (I)table[k];
    __syncthreads();
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < count * n; i += (I)gridDim.x * blockDim.x) {
        I s = i / count, r = i - s * count;
        I xo = t[3 * rank], yo = t[3 * rank + 1];
        for (int d = rank - 1; d >= 0; d--) {
            I q = r / t[d];
            I idx = r - q * t[d];
            r = q;
            xo += idx * t[rank + d];
            yo += idx * t[2 * rank + d];
        }
        y[s * y_sample + yo] = x[s * x_sample + xo];
    }
}
extern "C" __global__ void strided_copy(const float* x, float* y, const long long* table, int rank, long long count, long long x_sample, long long y_sample, int n) {
    strided_copy_of<long long>(x, y, table, rank, count, x_sample, y_sample, n);
}
extern "C" __global__ void strided_copy32(const float* x, float* y, const long long* table, int rank, int count, int x_sample, int y_sample, int n) {
    strided_copy_of<int>(x, y, table, rank, count, x_sample, y_sample, n);
}

// y[i] = a[i.as] op b[i.bs] per sample (table: dims, a strides, b strides); ops 0-3: + - * /.
// A constant operand has a per-sample stride of 0.
extern "C" __global__ void binary(const float* a, const float* b, float* y, const long long* table, int rank, long long count, long long a_sample, long long b_sample, int n, int op) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count * n; i += (long long)gridDim.x * blockDim.x) {
        long long s = i / count, r = i % count;
        long long ao = s * a_sample, bo = s * b_sample;
        for (int d = rank - 1; d >= 0; d--) {
            long long idx = r % table[d];
            r /= table[d];
            ao += idx * table[rank + d];
            bo += idx * table[2 * rank + d];
        }
        float u = a[ao], w = b[bo];
        y[i] = op == 0 ? u + w : op == 1 ? u - w : op == 2 ? u * w : u / w;
    }
}

// Softmax over `len` entries `inner` apart, for `groups` = samples x outer x inner groups.
extern "C" __global__ void softmax(const float* x, float* y, long long groups, int len, long long inner) {
    for (long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x; g < groups; g += (long long)gridDim.x * blockDim.x) {
        long long base = (g / inner) * len * inner + g % inner;
        float m = -3.0e38f;
        for (int j = 0; j < len; j++) m = fmaxf(m, x[base + j * inner]);
        float sum = 0.0f;
        for (int j = 0; j < len; j++) sum += __expf(x[base + j * inner] - m);
        for (int j = 0; j < len; j++) y[base + j * inner] = __expf(x[base + j * inner] - m) / sum;
    }
}

// Softmax over contiguous rows of `len` (inner = 1: the attention's scores), one warp per row.
extern "C" __global__ void softmax_rows(const float* x, float* y, long long rows, int len) {
    long long row = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* p = x + row * len;
    float m = -3.0e38f;
    for (int j = lane; j < len; j += 32) m = fmaxf(m, p[j]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float sum = 0.0f;
    for (int j = lane; j < len; j += 32) sum += __expf(p[j] - m);
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    for (int j = lane; j < len; j += 32) y[row * len + j] = __expf(p[j] - m) / sum;
}

// A 1x1 convolution of dense [c, rest] samples: y[o, r] = act(sum w[o, j] x[j, r] + bias[o]).
extern "C" __global__ void pointwise(const float* x, float* y, const float* w, const float* bias, int c, int k, long long rest, int n, int kind) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (long long)n * k * rest; i += (long long)gridDim.x * blockDim.x) {
        long long r = i % rest, s = i / ((long long)k * rest);
        int o = (int)((i / rest) % k);
        float acc = bias ? bias[o] : 0.0f;
        for (int j = 0; j < c; j++) acc += w[o * c + j] * x[(s * c + j) * rest + r];
        y[i] = act(acc, kind);
    }
}

// An activation of `count` dense values.
extern "C" __global__ void dense_act(const float* x, float* y, long long count, int kind) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x) y[i] = act(x[i], kind);
}
