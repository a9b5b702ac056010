"""OpenCL devices through PyOpenCL: driver choice and self-test, guarded builds, kernels."""
