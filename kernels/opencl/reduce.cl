// Row reductions of a contiguous (M, K) array: sum, prod, max, min, argmax, argmin.
// reduce_group: one work-group per (row, part) with a local-memory tree; `parts` > 1
//   splits long rows over several groups (the host then reduces the (M, parts) partials).
// reduce_serial: one work-item per row, for short rows.
// Arg reductions carry (value, index) pairs; index -1 marks "no element yet"; when
// has_idx != 0 the input indices come from in_idx (the second pass over partials).
${header}
#define T ${t}
#define U ${uns_t}
#define IS_FLOAT ${is_float}
#define IS_ARG ${is_arg}
#define KAHAN ${kahan}
#define IDENT ${ident}

inline T combine(T a, T b) { return ${combine}; }

#if IS_ARG
// Does (vb, ib) beat (va, ia)? NaN beats everything (NumPy returns the first NaN),
// ties go to the smaller index, so the result does not depend on the order of folding.
inline int better(T va, long ia, T vb, long ib) {
    if (ib < 0) return 0;
    if (ia < 0) return 1;
#if IS_FLOAT
    if (isnan(va)) return isnan(vb) && ib < ia;
    if (isnan(vb)) return 1;
#endif
    if (vb ${cmp} va) return 1;
    return vb == va && ib < ia;
}
#endif

// Accumulate src[k] for k in [lo, hi) with stride `step` into *acc (and *ix for arg ops).
inline void accumulate(__global const T* src, __global const long* src_idx, const int has_idx,
                       long lo, long hi, long step, T* acc, long* ix)
{
#if IS_ARG
    T v = *acc; long j = *ix;
    for (long k = lo; k < hi; k += step) {
        const T x = src[k];
        const long jx = has_idx ? src_idx[k] : k;
        if (better(v, j, x, jx)) { v = x; j = jx; }
    }
    *acc = v; *ix = j;
#elif KAHAN
    // Compensated float sum; the compensation is dropped once the sum is not finite
    // (inf - inf would turn an infinite sum into NaN).
    T s = *acc, c = (T)0;
    for (long k = lo; k < hi; k += step) {
        const T y = src[k] - c;
        const T t = s + y;
        c = isfinite(t) ? (t - s) - y : (T)0;
        s = t;
    }
    *acc = s;
#else
    T s = *acc;
    for (long k = lo; k < hi; k += step) s = combine(s, src[k]);
    *acc = s;
#endif
}

__kernel void reduce_group(__global T* restrict out, __global long* restrict out_idx,
                           __global const T* restrict in, __global const long* restrict in_idx,
                           const int has_idx, const long K, const long parts, const long chunk,
                           __local T* lv, __local long* li)
{
    const long g = (long)get_group_id(0);
    const long row = g / parts, p = g % parts;
    const int lid = (int)get_local_id(0), wg = (int)get_local_size(0);
    const long lo = p * chunk, hi = min(K, lo + chunk);
    T acc = IDENT; long ix = -1;
    accumulate(in + row * K, in_idx + (has_idx ? row * K : 0), has_idx, lo + lid, hi, wg,
               &acc, &ix);
    lv[lid] = acc;
#if IS_ARG
    li[lid] = ix;
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = wg / 2; s > 0; s >>= 1) {
        if (lid < s) {
#if IS_ARG
            if (better(lv[lid], li[lid], lv[lid + s], li[lid + s])) {
                lv[lid] = lv[lid + s];
                li[lid] = li[lid + s];
            }
#else
            lv[lid] = combine(lv[lid], lv[lid + s]);
#endif
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        out[g] = lv[0];
#if IS_ARG
        out_idx[g] = li[0];
#endif
    }
}

__kernel void reduce_serial(__global T* restrict out, __global long* restrict out_idx,
                            __global const T* restrict in, __global const long* restrict in_idx,
                            const int has_idx, const long M, const long K)
{
    const long row = (long)get_global_id(0);
    if (row >= M) return;
    T acc = IDENT; long ix = -1;
    accumulate(in + row * K, in_idx + (has_idx ? row * K : 0), has_idx, 0, K, 1, &acc, &ix);
    out[row] = acc;
#if IS_ARG
    out_idx[row] = ix;
#endif
}
