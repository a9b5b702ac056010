// Sources: `full` (one value) and `arange` (start + i*step in the compute type C).
${header}
#define O ${out_t}
#define C ${calc_t}

__kernel void fill(__global O* restrict out, const O value, const long n)
{
    const long i = (long)get_global_id(0);
    if (i < n) out[i] = value;
}

__kernel void arange(__global O* restrict out, const C start, const C step, const long n)
{
    const long i = (long)get_global_id(0);
    if (i < n) out[i] = ${convert};
}
