// Batched C[b] = A[b] @ B[b] with 16x16 local-memory tiles. A[b] starts at aoff[b], B[b] at
// boff[b] (elements), so broadcast batch dims need no copies; C is contiguous (batch, M, N).
// A fused epilogue (hermes_nb/codegen/c_fused.py) adds its functions, its inputs after K
// and the expression each product element passes through at its store.
${header}
#define T ${t}
#define U ${uns_t}
#define IS_FLOAT ${is_float}
#define IS_COMPLEX ${is_complex}
#define TS 16

${functions}

#if IS_COMPLEX  /* T is float2/double2: (re, im) */
#define MAD(acc, a, b) acc += (T)((a).x * (b).x - (a).y * (b).y, (a).x * (b).y + (a).y * (b).x)
#elif IS_FLOAT
#define MAD(acc, a, b) acc += (a) * (b)
#else
#define MAD(acc, a, b) acc = (T)((U)(acc) + (U)(a) * (U)(b))  /* wraps like NumPy */
#endif

__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))
void matmul(__global ${out_t}* restrict C, __global const T* restrict A, __global const T* restrict B,
            __global const long* restrict aoff, __global const long* restrict boff,
            const long M, const long N, const long K${epi_args})
{
    __local T As[TS][TS];
    __local T Bs[TS][TS];
    const long col = (long)get_global_id(0), row = (long)get_global_id(1);
    const long b = (long)get_global_id(2);
    const int tx = (int)get_local_id(0), ty = (int)get_local_id(1);
    A += aoff[b];
    B += boff[b];
    T acc = (T)0;
    for (long k0 = 0; k0 < K; k0 += TS) {
        const long ka = k0 + tx, kb = k0 + ty;
        As[ty][tx] = (row < M && ka < K) ? A[row * K + ka] : (T)0;
        Bs[ty][tx] = (kb < K && col < N) ? B[kb * N + col] : (T)0;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; ++k) MAD(acc, As[ty][k], Bs[k][tx]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < M && col < N) C[(b * M + row) * N + col] = ${store};
}
