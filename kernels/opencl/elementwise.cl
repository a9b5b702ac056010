// Elementwise kernel: out[i] = f(inputs at i), with NumPy broadcasting.
// Filled in by hermes_nb/devices/opencl_kernels.py:
//   header  fp64 pragma      T / O / U  input, output and unsigned-twin types
//   args    one `__global const X* restrict inK,` per input
//   index   offsets of strided inputs (only in the strided variant)
//   loads   `const X vK = inK[...];` per input
//   expr    the op as an expression of v0, v1, v2 (type T), converted to O
${header}
#define T ${in_t}
#define O ${out_t}
#define U ${uns_t}
#define IS_FLOAT ${is_float}

#if IS_FLOAT
// Python/NumPy floor division and modulo (npy_divmod): sign follows the divisor.
inline T h_floordiv(T a, T b) {
    if (b == (T)0) return a / b;
    T mod = fmod(a, b);
    T div = (a - mod) / b;
    if (mod != (T)0 && ((b < (T)0) != (mod < (T)0))) div -= (T)1;
    if (div == (T)0) return copysign((T)0, a / b);
    T fl = floor(div);
    if (div - fl > (T)0.5) fl += (T)1;
    return fl;
}
inline T h_rem(T a, T b) {
    T mod = fmod(a, b);
    if (b == (T)0) return mod;
    if (mod != (T)0) {
        if ((b < (T)0) != (mod < (T)0)) mod += b;
    } else {
        mod = copysign((T)0, b);
    }
    return mod;
}
// NaN-propagating; on ties (0.0 vs -0.0) the second operand wins, as in NumPy on x86.
inline T h_max(T a, T b) { return (a > b || isnan(a)) ? a : b; }
inline T h_min(T a, T b) { return (a < b || isnan(a)) ? a : b; }
inline T h_relu(T a) { return (a > (T)0 || isnan(a)) ? a : (T)0; }
// NOTE: PoCL's scalar exp/tanh return finite numbers for NaN; guard them
inline T h_sigmoid(T a) { return isnan(a) ? a : (T)1 / ((T)1 + exp(-a)); }
inline T h_exp(T a) { return isnan(a) ? a : exp(a); }
inline T h_tanh(T a) { return isnan(a) ? a : tanh(a); }
#else
// Integers: wrap on overflow like NumPy (do the arithmetic unsigned, where C defines it),
// and never divide by 0 or compute MIN / -1 (both trap on x86).
inline T h_floordiv(T a, T b) {
    if (b == (T)0) return (T)0;
    if (b == (T)-1) return (T)((U)0 - (U)a);
    T q = a / b;
    if ((a % b != (T)0) && ((a < (T)0) != (b < (T)0))) q -= (T)1;
    return q;
}
inline T h_rem(T a, T b) {
    if (b == (T)0 || b == (T)-1) return (T)0;
    T r = a % b;
    if (r != (T)0 && ((r < (T)0) != (b < (T)0))) r += b;
    return r;
}
inline T h_pow(T a, T b) {
    if (b < (T)0) {  // NumPy raises; give the exact result where it is an integer
        if (a == (T)1) return (T)1;
        if (a == (T)-1) return (b & (T)1) ? (T)-1 : (T)1;
        return (T)0;
    }
    U r = 1, base = (U)a;
    while (b) {
        if (b & (T)1) r *= base;
        base *= base;
        b >>= 1;
    }
    return (T)r;
}
inline T h_max(T a, T b) { return a >= b ? a : b; }
inline T h_min(T a, T b) { return a <= b ? a : b; }
#endif

__kernel void ew(__global O* restrict out, ${args} __global const long* restrict meta, const long n)
{
    const long i = (long)get_global_id(0);
    if (i >= n) return;
${index}
${loads}
    out[i] = ${expr};
}
