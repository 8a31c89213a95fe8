// The dense CRF's inner loops, written once over clang's vector types (8-float vectors with a 4-float tail) and
// instantiated twice: for baseline x86-64, where each 8-float operation becomes two SSE2 operations, and under
// `target("avx2,fma")`, where it is one AVX2 operation and a·b + c within one expression is one fused
// multiply-add (clang's default -ffp-contract=on). The bodies are always-inline functions without target
// attributes, so each instantiation compiles them with its own instruction set.
#include "CDenseCRFKernels.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef float f8 __attribute__((vector_size(32)));
typedef float f4 __attribute__((vector_size(16)));
typedef int32_t i8 __attribute__((vector_size(32)));
typedef int32_t i4 __attribute__((vector_size(16)));
typedef uint32_t u8 __attribute__((vector_size(32)));
typedef uint32_t u4 __attribute__((vector_size(16)));

// Every function taking or returning an 8-float vector is inlined, so no 32-byte vector crosses a call in the
// baseline build and clang's warning about that ABI does not apply.
#pragma clang diagnostic ignored "-Wpsabi"

#define INLINE static inline __attribute__((always_inline))
#define AVX2_FMA __attribute__((target("avx2,fma")))

// MARK: - Vector helpers

INLINE f8 load8(const float *p) { f8 v; memcpy(&v, p, sizeof v); return v; }
INLINE f4 load4(const float *p) { f4 v; memcpy(&v, p, sizeof v); return v; }
INLINE void store8(float *p, f8 v) { memcpy(p, &v, sizeof v); }
INLINE void store4(float *p, f4 v) { memcpy(p, &v, sizeof v); }
INLINE f8 splat8(float x) { return (f8){x, x, x, x, x, x, x, x}; }
INLINE f4 splat4(float x) { return (f4){x, x, x, x}; }

/// Lanes whose column (first + lane) is below `limit` keep `v`; the others become `other`.
INLINE f8 keep8(f8 v, int64_t first, int64_t limit, float other) {
    i8 keep = (i8){0, 1, 2, 3, 4, 5, 6, 7} < (int32_t)(limit - first);
    return (f8)(((i8)v & keep) | ((i8)splat8(other) & ~keep));
}

INLINE f4 keep4(f4 v, int64_t first, int64_t limit, float other) {
    i4 keep = (i4){0, 1, 2, 3} < (int32_t)(limit - first);
    return (f4)(((i4)v & keep) | ((i4)splat4(other) & ~keep));
}

// eˣ for −87.3 ≤ x ≤ 0: Cephes' `expf` (range reduction by ln 2 in two parts, a degree-6 polynomial; relative
// error below 2 × 10⁻⁷). x / ln 2 is rounded to the nearest integer n by adding 1.5 × 2²³ (n lands in the low
// mantissa bits), and 2ⁿ is built from those bits.
#define EXPONENTIAL(F, U)                                                                                      \
    F shifted = x * 1.44269504f + 12582912.0f;                                                                 \
    F n = shifted - 12582912.0f;                                                                               \
    F r = x - n * 0.693359375f;                                                                                \
    r = r - n * -2.12194440e-4f;                                                                               \
    F r2 = r * r;                                                                                              \
    F p = r * 1.9875691500e-4f + 1.3981999507e-3f;                                                            \
    p = p * r + 8.3334519073e-3f;                                                                              \
    p = p * r + 4.1665795894e-2f;                                                                              \
    p = p * r + 1.6666665459e-1f;                                                                              \
    p = p * r + 5.0000001201e-1f;                                                                              \
    p = p * r2 + r;                                                                                            \
    p = p + 1.0f;                                                                                              \
    U bits = (((U)shifted - 0x4B400000u) + 127u) << 23;                                                        \
    return p * (F)bits;

INLINE f8 exponential8(f8 x) { EXPONENTIAL(f8, u8) }
INLINE f4 exponential4(f4 x) { EXPONENTIAL(f4, u4) }

// ln x for normal positive x: musl's reduction to m ∈ [√½, √2) by integer arithmetic, then Cephes' `logf`
// polynomial (relative error below 2 × 10⁻⁷).
#define LOGARITHM(F, U)                                                                                        \
    U shifted = (U)x + (0x3F800000u - 0x3F3504F3u);                                                            \
    F k = (F)((shifted >> 23) + (0x4B400000u - 127u)) - 12582912.0f;                                           \
    F m = (F)((shifted & 0x007FFFFFu) + 0x3F3504F3u) - 1.0f;                                                   \
    F z = m * m;                                                                                               \
    F y = m * 7.0376836292e-2f - 1.1514610310e-1f;                                                             \
    y = y * m + 1.1676998740e-1f;                                                                              \
    y = y * m - 1.2420140846e-1f;                                                                              \
    y = y * m + 1.4249322787e-1f;                                                                              \
    y = y * m - 1.6668057665e-1f;                                                                              \
    y = y * m + 2.0000714765e-1f;                                                                              \
    y = y * m - 2.4999993993e-1f;                                                                              \
    y = y * m + 3.3333331174e-1f;                                                                              \
    y = y * m * z;                                                                                             \
    y = y + k * -2.12194440e-4f;                                                                               \
    y = y - z * 0.5f;                                                                                          \
    return m + y + k * 0.693359375f;

INLINE f8 logarithm8(f8 x) { LOGARITHM(f8, u8) }
INLINE f4 logarithm4(f4 x) { LOGARITHM(f4, u4) }

INLINE float sum8(f8 v) {
    f4 half = (f4){v[0], v[1], v[2], v[3]} + (f4){v[4], v[5], v[6], v[7]};
    return (half[0] + half[2]) + (half[1] + half[3]);
}

INLINE float max8(f8 v) {
    f4 half = __builtin_elementwise_max((f4){v[0], v[1], v[2], v[3]}, (f4){v[4], v[5], v[6], v[7]});
    float a = half[0] > half[2] ? half[0] : half[2], b = half[1] > half[3] ? half[1] : half[3];
    return a > b ? a : b;
}

// MARK: - Bodies

INLINE void blur_body(const float *source, const float *second_source, float *target,
                      const int32_t *neighbours, int64_t width, int64_t first_vertex, int64_t end_vertex) {
    for (int64_t vertex = first_vertex; vertex < end_vertex; vertex++) {
        const int64_t here = (vertex + 1) * width, first = (int64_t)neighbours[2 * vertex] * width;
        const int64_t second = (int64_t)neighbours[2 * vertex + 1] * width;
        float *out = target + here;
        int64_t c = 0;
        if (second_source) {  // the source is the sum of two buffers
#define AT8(offset) (load8(source + (offset) + c) + load8(second_source + (offset) + c))
#define AT4(offset) (load4(source + (offset) + c) + load4(second_source + (offset) + c))
            for (; c + 8 <= width; c += 8) store8(out + c, AT8(here) + 0.5f * (AT8(first) + AT8(second)));
            if (c < width) store4(out + c, AT4(here) + 0.5f * (AT4(first) + AT4(second)));
#undef AT8
#undef AT4
        } else {
            for (; c + 8 <= width; c += 8) {
                store8(out + c, load8(source + here + c)
                                    + 0.5f * (load8(source + first + c) + load8(source + second + c)));
            }
            if (c < width) {
                store4(out + c, load4(source + here + c)
                                    + 0.5f * (load4(source + first + c) + load4(source + second + c)));
            }
        }
    }
}

/// Sums `vectors` 8-float columns from `c` (0: one 4-float column, the tail) over every kernel's corners into
/// the row's energies (the unary plus the messages). `vectors` is a constant after inlining, so the
/// accumulators stay in registers and the unused branch disappears.
INLINE void slice_block(const crf_kernel_view *views, int32_t view_count, const float *unary, float *row,
                        int64_t width, int64_t point, int64_t c, const int vectors) {
    f8 sums[4];
    f4 tail = vectors == 0 ? load4(unary + c) : splat4(0);
    for (int j = 0; j < vectors; j++) sums[j] = load8(unary + c + 8 * j);
    for (int32_t index = 0; index < view_count; index++) {
        const crf_kernel_view view = views[index];
        const float scale = view.factor * view.normalisation[point];
        const int64_t base = point * view.corners;
        for (int32_t r = 0; r < view.corners; r++) {
            const float *vertex = view.lattice + (int64_t)view.offsets[base + r] * width + c;
            const float w = view.weights[base + r] * scale;
            if (vectors == 0) tail = tail + splat4(w) * load4(vertex);
            for (int j = 0; j < vectors; j++) sums[j] = sums[j] + splat8(w) * load8(vertex + 8 * j);
        }
    }
    if (vectors == 0) store4(row + c, tail);
    for (int j = 0; j < vectors; j++) store8(row + c + 8 * j, sums[j]);
}

/// The softmax of the first k energies of each of `count` rows in place; padding columns become 0. eˣ below
/// −87.3 is below float's normal range, so x − max is clamped there. `count` is a constant after inlining: the
/// rows' dependency chains (max, exponentials, sum, division) interleave, each row's arithmetic unchanged.
INLINE void softmax_rows(float *const *rows, const int count, int64_t width, int64_t k) {
    const float lowest = -__builtin_inff();
    float top[4], total[4];
    for (int j = 0; j < count; j++) {
        const float *row = rows[j];
        f8 top8 = splat8(lowest);
        int64_t c = 0;
        for (; c + 8 <= width; c += 8) top8 = __builtin_elementwise_max(top8, keep8(load8(row + c), c, k, lowest));
        top[j] = max8(top8);
        if (c < width) {
            f4 tail = keep4(load4(row + c), c, k, lowest);
            float a = tail[0] > tail[2] ? tail[0] : tail[2], b = tail[1] > tail[3] ? tail[1] : tail[3];
            top[j] = top[j] > a ? top[j] : a;
            top[j] = top[j] > b ? top[j] : b;
        }
    }
    f8 total8[4];
    for (int j = 0; j < count; j++) total8[j] = splat8(0);
    int64_t c = 0;
    for (; c + 8 <= width; c += 8) {
        for (int j = 0; j < count; j++) {
            f8 x = __builtin_elementwise_max(load8(rows[j] + c) - top[j], splat8(-87.3f));
            f8 e = keep8(exponential8(x), c, k, 0);
            total8[j] += e;
            store8(rows[j] + c, e);
        }
    }
    for (int j = 0; j < count; j++) total[j] = sum8(total8[j]);
    if (c < width) {
        for (int j = 0; j < count; j++) {
            f4 x = __builtin_elementwise_max(load4(rows[j] + c) - top[j], splat4(-87.3f));
            f4 e = keep4(exponential4(x), c, k, 0);
            total[j] += (e[0] + e[2]) + (e[1] + e[3]);
            store4(rows[j] + c, e);
        }
    }
    for (int j = 0; j < count; j++) {
        const float inverse = 1.0f / total[j];
        for (c = 0; c + 8 <= width; c += 8) store8(rows[j] + c, load8(rows[j] + c) * inverse);
        if (c < width) store4(rows[j] + c, load4(rows[j] + c) * inverse);
    }
}

/// Calls BLOCK(c, vectors) over a row of `width` columns: blocks of four 8-float vectors, then one of three, two
/// or one, then the 4-float tail (vectors 0); `vectors` is a literal in every call, so each inlines to
/// straight-line code with its accumulators in registers.
#define FOR_EACH_BLOCK(width, BLOCK)                                                                           \
    do {                                                                                                       \
        int64_t column = 0;                                                                                    \
        for (; column + 32 <= (width); column += 32) BLOCK(column, 4);                                         \
        switch (((width) - column) / 8) {                                                                      \
        case 3: BLOCK(column, 3); column += 24; break;                                                         \
        case 2: BLOCK(column, 2); column += 16; break;                                                         \
        case 1: BLOCK(column, 1); column += 8; break;                                                          \
        default: break;                                                                                        \
        }                                                                                                      \
        if (column < (width)) BLOCK(column, 0);                                                                \
    } while (0)

/// The energies of one point (its unary plus every kernel's message) into `row`.
INLINE void slice_row(const crf_kernel_view *views, int32_t view_count, const float *energies, float *row,
                      int64_t width, int64_t point) {
#define SLICE_BLOCK(c, vectors) slice_block(views, view_count, energies, row, width, point, c, vectors)
    FOR_EACH_BLOCK(width, SLICE_BLOCK);
#undef SLICE_BLOCK
}

/// Adds `vectors` 8-float columns of `source` from `c` (0: one 4-float column, the tail), held in registers, to
/// the rows of the point's vertices in every kernel's `targets[index]`: row += barycentric weight ×
/// normalisation[point] × source.
INLINE void splat_block(const crf_kernel_view *views, int32_t view_count, float *const *targets,
                        const float *source, int64_t width, int64_t point, int64_t c, const int vectors) {
    f8 values[4];
    const f4 tail = vectors == 0 ? load4(source + c) : splat4(0);
    for (int j = 0; j < vectors; j++) values[j] = load8(source + c + 8 * j);
    for (int32_t index = 0; index < view_count; index++) {
        const crf_kernel_view view = views[index];
        const float scale = view.normalisation[point];
        const int64_t base = point * view.corners;
        for (int32_t r = 0; r < view.corners; r++) {
            float *row = targets[index] + (int64_t)view.offsets[base + r] * width + c;
            const float w = view.weights[base + r] * scale;
            if (vectors == 0) store4(row, load4(row) + splat4(w) * tail);
            for (int j = 0; j < vectors; j++) store8(row + 8 * j, load8(row + 8 * j) + splat8(w) * values[j]);
        }
    }
}

/// Splats a point's row (`width` floats) into every kernel's `targets[index]`, block by block.
INLINE void splat_row(const crf_kernel_view *views, int32_t view_count, float *const *targets,
                      const float *source, int64_t width, int64_t point) {
#define SPLAT_BLOCK(c, vectors) splat_block(views, view_count, targets, source, width, point, c, vectors)
    FOR_EACH_BLOCK(width, SPLAT_BLOCK);
#undef SPLAT_BLOCK
}

/// Up to four points (`count`, a constant after inlining) from `point`: slice, softmax together, store, splat
/// in point order.
INLINE void slice_softmax_points(const crf_kernel_view *views, int32_t view_count, const float *unary, float *q,
                                 int64_t q_stride, float *const *targets, int64_t width, int64_t k,
                                 int64_t point, float *local, const int count) {
    const int pixel_rows = q && q_stride == width;  // Q's rows are the padded rows: compute in place
    float *rows[4];
    for (int j = 0; j < count; j++) {
        rows[j] = pixel_rows ? q + (point + j) * width : local + j * width;
        slice_row(views, view_count, unary + (point + j) * width, rows[j], width, point + j);
    }
    softmax_rows(rows, count, width, k);
    for (int j = 0; j < count; j++) {
        if (q && !pixel_rows) memcpy(q + (point + j) * q_stride, rows[j], (size_t)k * sizeof(float));
        if (targets) splat_row(views, view_count, targets, rows[j], width, point + j);
    }
}

INLINE void slice_softmax_body(const crf_kernel_view *views, int32_t view_count, const float *unary, float *q,
                               int64_t q_stride, float *const *targets, int64_t width, int64_t k,
                               int64_t first_point, int64_t end_point) {
    float local[4 * width];
    int64_t point = first_point;
    for (; point + 4 <= end_point; point += 4) {
        slice_softmax_points(views, view_count, unary, q, q_stride, targets, width, k, point, local, 4);
    }
    for (; point < end_point; point++) {
        slice_softmax_points(views, view_count, unary, q, q_stride, targets, width, k, point, local, 1);
    }
}

INLINE void prepare_body(const float *probabilities, int64_t k, int64_t width, float floor, float *unary,
                         float *q, const crf_kernel_view *views, int32_t view_count, float *const *targets,
                         int64_t first_point, int64_t end_point) {
    float local[width];
    for (int64_t point = first_point; point < end_point; point++) {
        const float *source = probabilities + point * k;
        float *clipped = unary + point * width, *first = q ? q + point * width : local;
        float total = 0;
        for (int64_t c = 0; c < k; c++) {
            const float p = source[c];
            const float value = p < floor ? floor : (p > 1 ? 1 : p);
            clipped[c] = value;
            total += value;
        }
        for (int64_t c = k; c < width; c++) clipped[c] = 1;
        const float inverse = 1 / total;
        for (int64_t c = 0; c < k; c++) first[c] = clipped[c] * inverse;
        for (int64_t c = k; c < width; c++) first[c] = 0;
        int64_t c = 0;
        for (; c + 8 <= width; c += 8) store8(clipped + c, logarithm8(load8(clipped + c)));
        if (c < width) store4(clipped + c, logarithm4(load4(clipped + c)));
        if (targets) splat_row(views, view_count, targets, first, width, point);
    }
}

// MARK: - The two instantiations

#define INSTANTIATE(SUFFIX, ATTRIBUTES)                                                                        \
    ATTRIBUTES static void blur_##SUFFIX(const float *source, const float *second, float *target,             \
                                         const int32_t *neighbours, int64_t width, int64_t first_vertex,       \
                                         int64_t end_vertex) {                                                 \
        blur_body(source, second, target, neighbours, width, first_vertex, end_vertex);                        \
    }                                                                                                          \
    ATTRIBUTES static void slice_softmax_##SUFFIX(const crf_kernel_view *views, int32_t view_count,            \
                                                  const float *unary, float *q, int64_t q_stride,              \
                                                  float *const *targets, int64_t width, int64_t k,             \
                                                  int64_t first_point, int64_t end_point) {                    \
        slice_softmax_body(views, view_count, unary, q, q_stride, targets, width, k, first_point, end_point);  \
    }                                                                                                          \
    ATTRIBUTES static void prepare_##SUFFIX(const float *probabilities, int64_t k, int64_t width, float floor, \
                                            float *unary, float *q, const crf_kernel_view *views,              \
                                            int32_t view_count, float *const *targets, int64_t first_point,    \
                                            int64_t end_point) {                                               \
        prepare_body(probabilities, k, width, floor, unary, q, views, view_count, targets, first_point,        \
                     end_point);                                                                               \
    }

INSTANTIATE(baseline, )
#if defined(__x86_64__) || defined(__i386__)
INSTANTIATE(avx2_fma, AVX2_FMA)
#endif

// MARK: - Dispatch

int crf_kernels_supported(crf_kernels_path path) {
    switch (path) {
    case crf_kernels_baseline: return 1;
    case crf_kernels_avx2_fma:
#if defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
        return 0;
#endif
    }
    return 0;
}

crf_kernels_path crf_kernels_default(void) {
    const char *forced = getenv("SLICELAB_CRF_KERNELS");
    if (forced && strcmp(forced, "baseline") == 0) return crf_kernels_baseline;
    return crf_kernels_supported(crf_kernels_avx2_fma) ? crf_kernels_avx2_fma : crf_kernels_baseline;
}

#if !(defined(__x86_64__) || defined(__i386__))
#define blur_avx2_fma blur_baseline
#define slice_softmax_avx2_fma slice_softmax_baseline
#define prepare_avx2_fma prepare_baseline
#endif

/// An unsupported path runs as baseline, so a caller's mistake cannot execute an illegal instruction.
static int use_avx2(crf_kernels_path path) {
    return path == crf_kernels_avx2_fma && crf_kernels_supported(crf_kernels_avx2_fma);
}

void crf_blur_sum(crf_kernels_path path, const float *source, const float *second, float *target,
                  const int32_t *neighbours, int64_t width, int64_t first_vertex, int64_t end_vertex) {
    if (use_avx2(path)) blur_avx2_fma(source, second, target, neighbours, width, first_vertex, end_vertex);
    else blur_baseline(source, second, target, neighbours, width, first_vertex, end_vertex);
}

void crf_slice_softmax_splat(crf_kernels_path path, const crf_kernel_view *views, int32_t view_count,
                             const float *unary, float *q, int64_t q_stride, float *const *targets,
                             int64_t width, int64_t class_count, int64_t first_point, int64_t end_point) {
    if (use_avx2(path)) {
        slice_softmax_avx2_fma(views, view_count, unary, q, q_stride, targets, width, class_count, first_point,
                               end_point);
    } else {
        slice_softmax_baseline(views, view_count, unary, q, q_stride, targets, width, class_count, first_point,
                               end_point);
    }
}

void crf_prepare_splat(crf_kernels_path path, const float *probabilities, int64_t class_count, int64_t width,
                       float floor, float *unary, float *q, const crf_kernel_view *views, int32_t view_count,
                       float *const *targets, int64_t first_point, int64_t end_point) {
    if (use_avx2(path)) {
        prepare_avx2_fma(probabilities, class_count, width, floor, unary, q, views, view_count, targets,
                         first_point, end_point);
    } else {
        prepare_baseline(probabilities, class_count, width, floor, unary, q, views, view_count, targets,
                         first_point, end_point);
    }
}

// MARK: - Buffers

float *crf_allocate(int64_t count) {
    const size_t bytes = (size_t)(count > 0 ? count : 1) * sizeof(float);
    const size_t huge = (size_t)2 << 20;
    void *buffer = NULL;
    if (posix_memalign(&buffer, bytes >= huge ? huge : 64, bytes) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    if (bytes >= huge) (void)madvise(buffer, bytes / huge * huge, MADV_HUGEPAGE);  // advice only
#endif
    return buffer;
}

void crf_free(void *buffer) { free(buffer); }
