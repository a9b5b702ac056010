// conv and pool (hermes_nb/ir/windows.py) over up to three spatial axes (fewer run with unit
// leading ones): one work-item per output element, x (N, C, D, H, W) and out contiguous.
// Padded positions are skipped: they read as 0 in a convolution and as the identity in a
// pool, which never changes a max or a sum.
${header}
#define T ${t}
#define U ${uns_t}
#define IS_FLOAT ${is_float}
#define IS_MAX ${is_max}

#if IS_FLOAT
#define MAD(acc, a, b) acc += (a) * (b)
#define ADD(acc, v) acc += (v)
#define TAKES(v, acc) ((v) > (acc) || isnan(v))  /* NaN propagates, as NumPy's maximum */
#else
#define MAD(acc, a, b) acc = (T)((U)(acc) + (U)(a) * (U)(b))  /* wraps like NumPy */
#define ADD(acc, v) acc = (T)((U)(acc) + (U)(v))
#define TAKES(v, acc) ((v) > (acc))
#endif

// The output element this work-item computes: its (n, channel, od, oh, ow) and whether any.
#define OUTPUT_INDEX(CH)                                                                   \
    const long ow = (long)get_global_id(0), oh = (long)get_global_id(1);                   \
    const long z = (long)get_global_id(2);                                                 \
    if (ow >= OW || oh >= OH) return;                                                      \
    const long od = z % OD, nc = z / OD, ch = nc % (CH), n = nc / (CH);

// The statements after it, for every tap of the window that lies inside the input (id, ih,
// iw: where it reads; kd, kh, kw: which tap).
#define FOR_TAPS_INSIDE(...)                                                               \
    for (int kd = 0; kd < KD; ++kd) {                                                      \
        const long id = od * sd + kd * dd - pd;                                            \
        if (id < 0 || id >= D) continue;                                                   \
        for (int kh = 0; kh < KH; ++kh) {                                                  \
            const long ih = oh * sh + kh * dh - ph;                                        \
            if (ih < 0 || ih >= H) continue;                                               \
            for (int kw = 0; kw < KW; ++kw) {                                              \
                const long iw = ow * sw + kw * dw - pw;                                    \
                if (iw < 0 || iw >= W) continue;                                           \
                __VA_ARGS__                                                                \
            }                                                                              \
        }                                                                                  \
    }

__kernel void conv(__global T* restrict out, __global const T* restrict x,
                   __global const T* restrict w, const long C, const long M, const long Cg,
                   const long groups, const long D, const long H, const long W,
                   const long OD, const long OH, const long OW,
                   const int KD, const int KH, const int KW, const int sd, const int sh,
                   const int sw, const int dd, const int dh, const int dw, const int pd,
                   const int ph, const int pw)
{
    OUTPUT_INDEX(M)
    const long first = (ch / (M / groups)) * Cg;  // the group's first input channel
    T acc = (T)0;
    for (long c = 0; c < Cg; ++c) {
        __global const T* xc = x + (n * C + first + c) * D * H * W;
        __global const T* wc = w + (ch * Cg + c) * KD * KH * KW;
        FOR_TAPS_INSIDE(MAD(acc, wc[(kd * KH + kh) * KW + kw], xc[(id * H + ih) * W + iw]);)
    }
    out[((nc * OD + od) * OH + oh) * OW + ow] = acc;
}

__kernel void pool(__global T* restrict out, __global const T* restrict x, const long C,
                   const long D, const long H, const long W, const long OD, const long OH,
                   const long OW, const int KD, const int KH, const int KW, const int sd,
                   const int sh, const int sw, const int dd, const int dh, const int dw,
                   const int pd, const int ph, const int pw)
{
    OUTPUT_INDEX(C)
    __global const T* xc = x + nc * D * H * W;
    T acc = (T)(${ident});
#if IS_MAX
    FOR_TAPS_INSIDE(const T v = xc[(id * H + ih) * W + iw]; if (TAKES(v, acc)) acc = v;)
#else
    FOR_TAPS_INSIDE(ADD(acc, xc[(id * H + ih) * W + iw]);)
#endif
    out[((nc * OD + od) * OH + oh) * OW + ow] = acc;
}
