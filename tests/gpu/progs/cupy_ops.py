# CuPy: elementwise, a cuBLAS matmul, a reduction, a raw kernel, the memory pool freed.
import cupy as cp

a = cp.random.rand(2048, 2048, dtype=cp.float32)
b = a @ a.T
s = float(cp.sum(cp.sqrt(b + 1)))
k = cp.RawKernel(r'''extern "C" __global__ void twice(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2; }''', "twice")
x = cp.ones(1 << 20, dtype=cp.float32)
k(((1 << 20) // 256,), (256,), (x, cp.int32(1 << 20)))
ok = float(x.sum()) == 2 * (1 << 20) and s > 0
del a, b, x
cp.get_default_memory_pool().free_all_blocks()
print(f"RESULT cupy sum={s:.1f} {'ok' if ok else 'FAIL'}")
raise SystemExit(0 if ok else 1)
