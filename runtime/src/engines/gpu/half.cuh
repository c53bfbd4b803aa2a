// fp16 <-> f32 by PTX conversions: NVRTC here has no CUDA headers (no cuda_fp16.h), so fp16
// values are their bits, `unsigned short`. Prepended to the kernels that need it.
__device__ __forceinline__ float h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ unsigned short f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
