"""Device code generators: render a fused elementwise :class:`Program` as native kernels."""
