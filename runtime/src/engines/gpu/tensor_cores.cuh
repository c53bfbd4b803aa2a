// Device helpers our tensor-core kernels share (pointwise.cu, stem.cu); the Rust side compiles each
// kernel's source after this one.

// 16 bytes from global to shared memory, asynchronously; `bytes` = 0 writes zeros instead.
__device__ __forceinline__ void copy16(signed char* shared, const signed char* global, int bytes) {
    unsigned address = (unsigned)__cvta_generic_to_shared(shared);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(address), "l"(global), "r"(bytes));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;"); }
template <int pending> __device__ __forceinline__ void wait() { asm volatile("cp.async.wait_group %0;" ::"n"(pending)); }

// 1.5 * 2^23: a float of this size has unit spacing, so adding it rounds to an integer (ties to
// even), and the integer sits in its low mantissa bits, two's complement, for |v| < 2^22.
#define ROUNDER 12582912.0f
#define ROUNDER_BITS 0x4B400000

// t rounded to the int8 grid (nearest, ties to even, saturated to [-127, 127]), in the low byte.
__device__ __forceinline__ unsigned int8_bits(float t) { return __float_as_uint(fminf(fmaxf(t, -127.0f), 127.0f) + ROUNDER); }

// The mma operands' fragments come from shared memory by ldmatrix: four 8 x 16-byte matrices per
// instruction, whose rows the lanes address (lanes 8i to 8i + 7: matrix i).
__device__ __forceinline__ void load_matrices(unsigned* r, const signed char* rows) {
    const unsigned address = (unsigned)__cvta_generic_to_shared(rows);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(address));
}

