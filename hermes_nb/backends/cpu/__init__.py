"""``cpu:0``: NumPy/SciPy for single ops, Numba kernels for fused ones, BLAS for matmul."""
