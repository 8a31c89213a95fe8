// The dense CRF's inner loops (the unary's logarithm + the first splat, blur, slice + softmax + the next splat)
// in two builds: baseline x86-64 (SSE2, 4 floats at a time) and AVX2 + FMA (8 floats, fused multiply-adds), the
// second compiled with `__attribute__((target("avx2,fma")))` and run only when the CPU reports both
// (`__builtin_cpu_supports`), never because the build machine has them. No outside library; used by Swift's
// `Classical` (DenseCRF) only.
//
// Rows are `width` floats (a multiple of 4), row 0 of a lattice is the always-zero "outside" vertex. Callers
// split the work (points or vertices) across threads; every function touches only its range and its targets.
#ifndef CDENSECRFKERNELS_H
#define CDENSECRFKERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The compiled versions of the loops.
typedef enum {
    crf_kernels_baseline = 0,  // x86-64 baseline: SSE2
    crf_kernels_avx2_fma = 1,  // AVX2 and FMA
} crf_kernels_path;

/// 1 when this CPU (and its OS) can run `path`.
int crf_kernels_supported(crf_kernels_path path);

/// The path a run uses: AVX2 + FMA when the CPU has both, else baseline; the environment variable
/// SLICELAB_CRF_KERNELS=baseline forces the baseline path (an unknown value or an unsupported path is ignored).
crf_kernels_path crf_kernels_default(void);

/// One pairwise kernel as the per-point loops read it.
typedef struct {
    int32_t corners;              // d + 1 lattice vertices per point
    const int32_t *offsets;       // offsets[point * corners + r]: the vertex number plus one
    const float *weights;         // barycentric weights, laid out like offsets
    const float *normalisation;   // per point, 1 / sqrt(K 1)
    float factor;                 // the Potts weight times the slice's constant (slice only)
    float *lattice;               // (vertices + 1) rows of width, the blurred lattice the slice reads
} crf_kernel_view;

// The splat the two fused loops end with: for every point, in point order, and every kernel i, adds
// weights × normalisation[point] × row (every column) to the rows of the point's vertices in `targets[i]`.

/// For every point in [first_point, end_point): clips probabilities[point × class_count + c] to [floor, 1],
/// writes unary[point] = ln clipped and, when `q` is not NULL, q[point] = clipped / Σ clipped (padding columns:
/// q 0, unary 0); when `targets` is not NULL, splats that Q row (the views give the offsets, weights and
/// normalisations; their `lattice` is not read).
void crf_prepare_splat(crf_kernels_path path, const float *probabilities, int64_t class_count, int64_t width,
                       float floor, float *unary, float *q, const crf_kernel_view *views, int32_t view_count,
                       float *const *targets, int64_t first_point, int64_t end_point);

/// One blur step along one lattice axis for the vertices in [first_vertex, end_vertex):
/// target[v + 1] = s[v + 1] + ½ (s[n₀] + s[n₁]) with n = neighbours[2 v], neighbours[2 v + 1] (vertex numbers
/// plus one, 0 for an absent neighbour) and s = source + second, the sum of two buffers (the two pixel halves'
/// splats), or s = source when `second` is NULL. `target` is neither source.
void crf_blur_sum(crf_kernels_path path, const float *source, const float *second, float *target,
                  const int32_t *neighbours, int64_t width, int64_t first_vertex, int64_t end_vertex);

/// For every point in [first_point, end_point), in point order: the row unary[point] + Σ_kernels factor ×
/// normalisation[point] × Σ_corners weight × lattice[vertex] (the slice), its softmax over the first
/// class_count columns (padding columns 0); when `q` is not NULL its first class_count values are stored at
/// q + point × q_stride (q_stride == width: the whole padded row); when `targets` is not NULL the row is splatted
/// (the next iteration's splat, into buffers other than the views' lattices).
void crf_slice_softmax_splat(crf_kernels_path path, const crf_kernel_view *views, int32_t view_count,
                             const float *unary, float *q, int64_t q_stride, float *const *targets,
                             int64_t width, int64_t class_count, int64_t first_point, int64_t end_point);

/// Builds a permutohedral lattice over `point_count` points of `dimension` features (already divided by the
/// kernel's widths; `features[point × dimension + k]`) as pydensecrf's `Permutohedral::init` does: writes each
/// point's d + 1 vertex numbers plus one into `offsets` and its barycentric weights into `weights` (both
/// point_count × (d + 1), caller-owned), the number of vertices into `vertex_count`, and a new table of each
/// vertex's two neighbours along every axis (`neighbours[(axis × M + v) × 2 + {0, 1}]`, vertex numbers plus one,
/// 0 when absent) into `neighbours`, to be freed with `crf_free`. Returns 0, or −1 when out of memory (nothing
/// to free then).
int crf_lattice_build(const float *features, int64_t point_count, int32_t dimension, int32_t *offsets,
                      float *weights, int64_t *vertex_count, int32_t **neighbours);

/// The symmetric normalisation of a built lattice's filter, 1 / √(K·1 + 1e-20) per point (K·1: ones splatted,
/// blurred along every axis in order, sliced with the constant 1 / (1 + 2⁻ᵈ)), into `normalisation`
/// (point_count floats). Returns 0, or −1 when out of memory.
int crf_lattice_normalisation(const int32_t *offsets, const float *weights, int64_t point_count,
                              int32_t dimension, const int32_t *neighbours, int64_t vertex_count,
                              float *normalisation);

/// `count` floats, uninitialised, aligned to 64 bytes; a buffer of 2 MiB or more is aligned to 2 MiB and offered
/// to the kernel as transparent huge pages (`madvise(MADV_HUGEPAGE)`), so filling it takes a few hundred page
/// faults instead of hundreds of thousands. NULL when out of memory. Free with `crf_free`.
float *crf_allocate(int64_t count);

/// Frees what `crf_allocate` or `crf_lattice_build` returned (NULL is ignored).
void crf_free(void *buffer);

#ifdef __cplusplus
}
#endif

#endif
