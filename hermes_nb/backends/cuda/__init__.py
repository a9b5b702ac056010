"""CUDA GPUs through CuPy: ``ElementwiseKernel``/``RawKernel`` builds, CuPy's memory pool."""
