// Generic strided copy: dst[dst_off + sum c_d*dst_st_d] = src[src_off + sum c_d*src_st_d]
// for every coordinate c of `shape`. Strides are in elements and may be negative or zero.
// One kernel per element size does reshape, permute, broadcast_to, slice, concat and
// the "make contiguous" step of reductions.
// meta = [ndim, dst_off, src_off, shape[ndim], dst_st[ndim], src_st[ndim]]
#define T ${t}

__kernel void strided_copy(__global T* restrict dst, __global const T* restrict src,
                           __global const long* restrict meta, const long n)
{
    const long i = (long)get_global_id(0);
    if (i >= n) return;
    const int nd = (int)meta[0];
    long d = meta[1], s = meta[2], rem = i;
    __global const long* shape = meta + 3;
    for (int k = nd - 1; k >= 0; --k) {
        const long c = rem % shape[k];
        rem /= shape[k];
        d += c * shape[nd + k];
        s += c * shape[2 * nd + k];
    }
    dst[d] = src[s];
}
