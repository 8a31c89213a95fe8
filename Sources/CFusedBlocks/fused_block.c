// MobileNetV2's inverted-residual block in one pass: see the header.
#include "CFusedBlocks.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

/// The largest dilation's ring (2d + 1 rows).
#define RING_MAX (2 * CFUSED_MAX_DILATION + 1)
/// Source rows a stem keeps upscaled along the columns, row r in slot r % STEM_RING: the two an upscaled row blends
/// are consecutive (never one slot), and at a scale of 1 or more the three upscaled rows of a stem row read at most
/// five consecutive source rows, so each is made once per stem row at most (a smaller scale makes some again).
#define STEM_RING 6

/// Expanded rows a call keeps: three at stride 1 (one residue's rows), else every row from the first to the last a
/// depthwise output row reads.
static inline int32_t ring_rows(const cfused_block *block) { return block->stride == 1 ? 3 : 2 * block->dilation + 1; }

static inline int32_t padded_to(int32_t n, int32_t lanes) { return (n + lanes - 1) / lanes * lanes; }

/// A depthwise convolution alone at stride 1 whose dilation reaches past the map both ways: every tap but the centre
/// reads padding, so it is a scale and a bias per channel, computed in one pass without rows or workspace.
static inline int centre_only(const cfused_block *b) {
    return !b->expands && !b->stem && !b->int8 && b->project_weights == NULL && b->stride == 1 && b->dilation >= b->height
        && b->dilation >= b->width;
}

static inline int32_t lanes_of(cfused_isa isa) { return isa == cfused_avx512 ? 16 : 8; }
/// Columns of a packed panel: the matrix kernel's NV · LANES.
static inline int32_t panel_of(cfused_isa isa) { return isa == cfused_avx512 ? 64 : 16; }

/// Rows of the widest matrix tile: 12 pixels of one or two vectors (24 accumulators at most).
#define MR_WIDE 12
/// The matrix kernel's block of k (see its comment; 32 KB of a 64-column panel), and the activation that stores its
/// partial sums as they are.
#define K_BLOCK 128
#define RAW (-1)

/// Where `run` keeps what in its workspace (offsets in floats, `lanes` a vector): the ring's rows, each with d
/// padding columns on each side; the depthwise row and the projected row (written whole before they are read); then a
/// stem's three upscaled rows and its STEM_RING source rows upscaled along the columns (one padding column each side);
/// then an int8 block's bytes: the input row as the expansion reads it (u8, channels padded to 4), later the depthwise
/// row rounded to u8 for the projection (one row's at a time, so they share it).
typedef struct {
    size_t row;                          // floats of a ring row
    size_t depthwise, projected, upscaled, wide, stem_row, input_row, total;
} workspace_layout;

static inline workspace_layout layout_of(const cfused_block *b, int32_t lanes) {
    workspace_layout l;
    l.row = ((size_t)b->width + 2 * b->dilation) * padded_to(b->hidden, lanes);
    l.depthwise = l.row * ring_rows(b);
    l.projected = l.depthwise + (size_t)b->out_width * padded_to(b->hidden, lanes);
    l.upscaled = l.projected + (size_t)b->out_width * padded_to(b->out_channels, lanes);
    l.stem_row = b->stem ? ((size_t)b->stem->upscaled_width + 2) * b->stem->source_channels : 0;
    l.wide = l.upscaled + 3 * l.stem_row;
    l.input_row = l.wide + STEM_RING * l.stem_row;
    const size_t input_bytes = (size_t)b->width * padded_to(b->in_channels, 4);
    const size_t depthwise_bytes = (size_t)b->out_width * padded_to(b->hidden, lanes);
    l.total = l.input_row
        + (b->int8 ? ((input_bytes > depthwise_bytes ? input_bytes : depthwise_bytes) + 63) / 64 * 16 : 0);
    return l;
}

// MARK: AVX-512: 6 pixels × 4 vectors (24 accumulators of 32 registers; 8 × 3 and 12 × 2 or 1 for narrower panels),
// 8 depthwise outputs at once.
#define NAME(x) x##_avx512
#define LANES 16
#define V __m512
#define TARGET __attribute__((target("avx512f,fma")))
#define LOAD _mm512_loadu_ps
#define STORE _mm512_storeu_ps
#define SET1 _mm512_set1_ps
#define FMA _mm512_fmadd_ps
#define SUB _mm512_sub_ps
#define GATHER(base, indexes) _mm512_i32gather_ps(_mm512_loadu_si512(indexes), base, 4)
#define MAX _mm512_max_ps
#define MIN _mm512_min_ps
#define ZERO _mm512_setzero_ps
#define MR 6
#define NV 4
#define ROWS(nv) ((nv) <= 2 ? MR_WIDE : (nv) == 3 ? 8 : MR)
#define XB 8
#include "block_kernels.inc"

// MARK: AVX2: 6 pixels × 2 vectors (12 accumulators of 16 registers; 12 × 1 for one), 4 depthwise outputs at once.
#define NAME(x) x##_avx2
#define LANES 8
#define V __m256
#define TARGET __attribute__((target("avx2,fma")))
#define LOAD _mm256_loadu_ps
#define STORE _mm256_storeu_ps
#define SET1 _mm256_set1_ps
#define FMA _mm256_fmadd_ps
#define SUB _mm256_sub_ps
#define GATHER(base, indexes) _mm256_i32gather_ps(base, _mm256_loadu_si256((const __m256i *)(indexes)), 4)
#define MAX _mm256_max_ps
#define MIN _mm256_min_ps
#define ZERO _mm256_setzero_ps
#define MR 6
#define NV 2
#define ROWS(nv) ((nv) == 1 ? MR_WIDE : MR)
#define XB 4
#include "block_kernels.inc"

#include "int8_kernels.inc"

int32_t cfused_supported(void) {
    __builtin_cpu_init();
    int32_t isas = 0;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) isas |= 1 << cfused_avx2;
    if (__builtin_cpu_supports("avx512f")) isas |= 1 << cfused_avx512;
    return isas;
}

int32_t cfused_padded(int32_t channels, cfused_isa isa) { return padded_to(channels, lanes_of(isa)); }

size_t cfused_packed_count(int32_t k, int32_t n, cfused_isa isa) {
    return (size_t)k * padded_to(n, lanes_of(isa));
}

void cfused_pack(const float *matrix, int32_t k, int32_t n, cfused_isa isa, float *packed) {
    const int32_t padded = padded_to(n, lanes_of(isa)), panel = panel_of(isa);
    for (int32_t column = 0; column < padded; column += panel) {
        int32_t width = padded - column < panel ? padded - column : panel;
        float *out = packed + (size_t)column * k;
        for (int32_t p = 0; p < k; p++)
            for (int32_t j = 0; j < width; j++)
                out[(size_t)p * width + j] = column + j < n ? matrix[(size_t)p * n + column + j] : 0.0f;
    }
}

size_t cfused_workspace_count(const cfused_block *block, cfused_isa isa) {
    return centre_only(block) ? 0 : layout_of(block, lanes_of(isa)).total;
}

void cfused_clear_workspace(const cfused_block *block, cfused_isa isa, float *workspace) {
    if (centre_only(block)) return;
    const workspace_layout l = layout_of(block, lanes_of(isa));
    const size_t hidden = padded_to(block->hidden, lanes_of(isa)), d = block->dilation, w = block->width;
    if (!block->expands && !block->stem && (size_t)block->in_channels != hidden) {
        // Rows copied pixel by pixel leave each pixel's channels past the input's unwritten. Nothing uses what the
        // depthwise makes of them, but they are kept zero so that no stale NaN or subnormal slows its arithmetic.
        memset(workspace, 0, sizeof(float) * l.depthwise);
        return;
    }
    // At stride 1 a dilation reaching past the row leaves the side taps out (see the depthwise kernel): the padding
    // columns are never read (ASPP's large rates on small maps, where they are most of the rows).
    const int reads_padding = block->stride != 1 || block->dilation < block->out_width;
    for (int32_t i = 0; reads_padding && i < ring_rows(block); i++) {
        memset(workspace + i * l.row, 0, sizeof(float) * d * hidden);
        memset(workspace + i * l.row + (d + w) * hidden, 0, sizeof(float) * d * hidden);
    }
    // The upscaled rows blend the ring's, padding included.
    for (int32_t i = 0; i < (block->stem ? STEM_RING : 0); i++) {
        const size_t c = block->stem->source_channels;
        memset(workspace + l.wide + i * l.stem_row, 0, sizeof(float) * c);
        memset(workspace + l.wide + (i + 1) * l.stem_row - c, 0, sizeof(float) * c);
    }
}

int32_t cfused_residues(const cfused_block *block) {
    return block->stride == 1 && !centre_only(block) ? block->dilation : 1;
}

int32_t cfused_run(const cfused_block *block, cfused_isa isa, int32_t image, int32_t residue, int32_t row_begin,
                   int32_t row_end, float *workspace) {
    if (block->dilation < 1 || block->dilation > CFUSED_MAX_DILATION || block->stride < 1 || residue < 0
        || residue >= cfused_residues(block)
        || (block->stem && (block->expands || block->residual || block->hidden != block->in_channels))
        || (block->residual && block->project_activation != cfused_identity))
        return -1;
    if (block->int8) {
        if (block->stem || !block->int8->project_weights || isa != cfused_avx512 || !cfused_int8_supported())
            return -1;
        run_int8(block, image, residue, row_begin, row_end, workspace);
        return 0;
    }
    if (centre_only(block)) {
        if (isa == cfused_avx512) centre_avx512(block, image, row_begin, row_end);
        else centre_avx2(block, image, row_begin, row_end);
    } else if (isa == cfused_avx512) run_avx512(block, image, residue, row_begin, row_end, workspace);
    else run_avx2(block, image, residue, row_begin, row_end, workspace);
    return 0;
}
