// Fused elementwise kernels: out[i] = hfused(inputs at i), with NumPy broadcasting.
// Filled in by hermes_nb/codegen/c_source.py (opencl_source):
//   header      fp64 pragma (when the program uses float64)
//   functions   helpers, `hfused` (scalar) and, in the vector variant, `hfused_vec`
//   args        one `__global const X* restrict inK,` per input
//   index       offsets oK of strided inputs (strided variant only)
//   loads       hfused arguments read at element i
//   vloads      hfused_vec arguments for elements i .. i + WIDTH - 1
//   params      `, const X cJ` per scalar parameter (passed on to hfused and hfused_vec)
${header}
// NumPy rounds a*b+c twice; do not let the compiler contract it into an fma.
#pragma OPENCL FP_CONTRACT OFF
#define VECTOR ${vector}
#define WIDTH ${width}

${functions}

// One element per work-item; also runs the tail (n % WIDTH elements, via a global
// offset) after fused_vec.
__kernel void fused(__global ${out_t}* restrict out, ${args} __global const long* restrict meta, const long n${params})
{
    const long i = (long)get_global_id(0);
    if (i >= n) return;
${index}
    out[i] = hfused(${loads});
}

#if VECTOR
// WIDTH contiguous elements per work-item, for the first n_vec * WIDTH elements. No tail
// loop here: a divergent branch in the body costs PoCL ~30% of its vectorised speed.
__kernel void fused_vec(__global ${out_t}* restrict out, ${args} __global const long* restrict meta, const long n_vec${params})
{
    const long v = (long)get_global_id(0);
    if (v >= n_vec) return;
    const long i = v * WIDTH;
    vstore${width}(hfused_vec(${vloads}), 0, out + i);
}
#endif
