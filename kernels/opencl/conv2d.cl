// 2-D correlation of each (H, W) image of a contiguous (batch, H, W) array with a
// kh x kw weight buffer: out[y, x] = sum_ij w[i, j] * in[map(y + i - kh/2), map(x + j - kw/2)].
// Separable filters run this twice with kh == 1 or kw == 1.
${header}
#define T ${t}

#define B_REFLECT101 0
#define B_REFLECT 1
#define B_REPLICATE 2
#define B_CONSTANT 3

// Map an out-of-range index into [0, n) like OpenCV's borderInterpolate (reflecting as many
// times as needed); -1 means "outside, reads as 0" (constant border).
inline long border(long i, const long n, const int mode)
{
    if (i >= 0 && i < n) return i;
    if (mode == B_CONSTANT) return -1;
    if (mode == B_REPLICATE || n == 1) return i < 0 ? 0 : n - 1;
    if (mode == B_REFLECT101) {
        const long period = 2 * n - 2;
        i %= period;
        if (i < 0) i += period;
        return i < n ? i : period - i;
    }
    const long period = 2 * n;  // B_REFLECT
    i %= period;
    if (i < 0) i += period;
    return i < n ? i : period - 1 - i;
}

__kernel void conv2d(__global T* restrict out, __global const T* restrict in,
                     __global const T* restrict w, const long H, const long W,
                     const int kh, const int kw, const int mode)
{
    const long x = (long)get_global_id(0), y = (long)get_global_id(1);
    const long b = (long)get_global_id(2);
    if (x >= W || y >= H) return;
    in += b * H * W;
    T acc = (T)0;
    const int ry = kh / 2, rx = kw / 2;
    if (y >= ry && y + ry < H && x >= rx && x + rx < W) {  // interior: no border mapping
        __global const T* p = in + (y - ry) * W + (x - rx);
        for (int i = 0; i < kh; ++i, p += W)
            for (int j = 0; j < kw; ++j) acc += w[i * kw + j] * p[j];
        out[(b * H + y) * W + x] = acc;
        return;
    }
    for (int i = 0; i < kh; ++i) {
        const long yy = border(y + i - kh / 2, H, mode);
        if (yy < 0) continue;
        for (int j = 0; j < kw; ++j) {
            const long xx = border(x + j - kw / 2, W, mode);
            if (xx < 0) continue;
            acc += w[i * kw + j] * in[yy * W + xx];
        }
    }
    out[(b * H + y) * W + x] = acc;
}
