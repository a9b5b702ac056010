// Reductions of a contiguous (A, K, B) array over K: sum, prod, max, min, argmax, argmin.
// reduce_group: B == 1; one work-group per (row, part) with a local-memory tree; `parts` > 1
//   splits long rows over several groups (the host then reduces the (A, parts) partials).
//   Work-items take contiguous runs on CPUs (`contig`), interleaved elements on GPUs.
// reduce_cols: one work-item per (a, b) walks the K axis with stride B (no transpose needed);
//   with B == 1 it is the serial kernel for short rows.
// Float sums, products, max and min accumulate in ACC: double where the device has fp64
// (each work-item's run then loses no accuracy; the local tree is pairwise), else T.
// Arg reductions carry (value, index) pairs; index -1 marks "no element yet"; when
// has_idx != 0 the input indices come from in_idx (the second pass over partials).
${header}
#define T ${t}
#define U ${uns_t}
#define IS_FLOAT ${is_float}
#define IS_ARG ${is_arg}
#define IDENT ${ident}

#if IS_FLOAT && !IS_ARG && defined(cl_khr_fp64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double ACC;
#else
typedef T ACC;
#endif

inline ACC combine(ACC a, ACC b) { return ${combine}; }

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

// Fold elements i0, i0 + di, ... < i1 of the row (element i at src[i * stride]) into
// *acc (and *ix, the winning index, for arg ops).
// `sync` (uniform over the work-group, with equal trip counts) puts a barrier in the loop so
// that PoCL runs its work-item loop inside it: neighbouring columns are then read together.
inline void accumulate(__global const T* src, __global const long* src_idx, const int has_idx,
                       long i0, const long i1, const long di, const long stride, ACC* acc, long* ix,
                       const int sync)
{
#if IS_ARG
    T v = *acc; long j = *ix;
    if (has_idx) {
        for (long i = i0; i < i1; i += di) {
            const T x = src[i * stride];
            const long jx = src_idx[i * stride];
            if (better(v, j, x, jx)) { v = x; j = jx; }
        }
    } else if (i0 < i1) {
        // A plain scan: indices only grow, so a tie keeps the element already held.
        if (j < 0) { v = src[i0 * stride]; j = i0; }
        for (long i = i0 + di; i < i1; i += di) {
            const T x = src[i * stride];
#if IS_FLOAT
            if (!isnan(v) && (x ${cmp} v || isnan(x))) { v = x; j = i; }
#else
            if (x ${cmp} v) { v = x; j = i; }
#endif
            if (sync) barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    *acc = v; *ix = j;
#else
    // Eight independent accumulators: shorter dependency chains (speed) and shorter serial
    // runs (float accuracy), like NumPy's pairwise blocks.
    ACC a0 = *acc, a1 = IDENT, a2 = IDENT, a3 = IDENT, a4 = IDENT, a5 = IDENT, a6 = IDENT,
        a7 = IDENT;
    const long s = di * stride;
    __global const T* p = src + i0 * stride;
    for (; i0 + 7 * di < i1; i0 += 8 * di, p += 8 * s) {
        a0 = combine(a0, p[0]);     a1 = combine(a1, p[s]);
        a2 = combine(a2, p[2 * s]); a3 = combine(a3, p[3 * s]);
        a4 = combine(a4, p[4 * s]); a5 = combine(a5, p[5 * s]);
        a6 = combine(a6, p[6 * s]); a7 = combine(a7, p[7 * s]);
        if (sync) barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (; i0 < i1; i0 += di, p += s) a0 = combine(a0, p[0]);
    *acc = combine(combine(combine(a0, a1), combine(a2, a3)),
                   combine(combine(a4, a5), combine(a6, a7)));
#endif
}

__kernel void reduce_group(__global T* restrict out, __global long* restrict out_idx,
                           __global const T* restrict in, __global const long* restrict in_idx,
                           const int has_idx, const long K, const long parts, const long chunk,
                           const int contig, __local T* lv, __local long* li)
{
    const long g = (long)get_group_id(0);
    const long row = g / parts, p = g % parts;
    const int lid = (int)get_local_id(0), wg = (int)get_local_size(0);
    const long lo = p * chunk, hi = min(K, lo + chunk);
    ACC acc = IDENT; long ix = -1;
    __global const T* src = in + row * K;
    __global const long* src_idx = in_idx + (has_idx ? row * K : 0);
    if (contig) {
        const long run = (hi - lo + wg - 1) / wg;
        const long i0 = lo + lid * run;
        accumulate(src, src_idx, has_idx, i0, min(hi, i0 + run), 1, 1, &acc, &ix, 0);
    } else {
        accumulate(src, src_idx, has_idx, lo + lid, hi, wg, 1, &acc, &ix, 0);
    }
    lv[lid] = (T)acc;
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
            lv[lid] = (T)combine(lv[lid], lv[lid + s]);
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

__kernel void reduce_cols(__global T* restrict out, __global long* restrict out_idx,
                          __global const T* restrict in, __global const long* restrict in_idx,
                          const int has_idx, const long A, const long K, const long B,
                          const int sync)
{
    const long g = (long)get_global_id(0);
    const int live = g < A * B;  // with sync, idle work-items still walk (column 0) in step
    if (!live && !sync) return;
    const long start = live ? (g / B) * K * B + g % B : 0;
    ACC acc = IDENT; long ix = -1;
    accumulate(in + start, in_idx + (has_idx ? start : 0), has_idx, 0, K, 1, B, &acc, &ix, sync);
    if (!live) return;
    out[g] = (T)acc;
#if IS_ARG
    out_idx[g] = ix;
#endif
}
