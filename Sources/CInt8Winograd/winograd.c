// Exact int8 Winograd F(2×2, 3×3) on AVX2: see the header. Planes are numbered 4i + j for row i, column j of a
// 4 × 4 Winograd-domain tile, in the input transform, the weights and the output transform alike.
#include "CInt8Winograd.h"

#include <immintrin.h>
#include <string.h>

#define AVX2 __attribute__((target("avx2")))
#define INLINE static inline __attribute__((always_inline))

enum {
    kRows = 6,              // tiles per micro-kernel call
    kChunkTiles = 8 * kRows,  // tiles per chunk
    kGroup = 64,            // output channels per pass of the matrix products and the output transform
};

/// Tiles along an extent: each block of 2d rows (or columns) holds d tiles, one per sub-grid.
INLINE int32_t tiles_along(int32_t extent, int32_t d) { return (extent + 2 * d - 1) / (2 * d) * d; }

/// The first of a tile's two output rows (or columns); the second is d further on.
INLINE int32_t tile_first(int32_t index, int32_t d) { return index / d * 2 * d + index % d; }

/// Tile rows and columns over the outputs computed.
INLINE int32_t tiles_down(const cint8_winograd_convolution *c) {
    return tiles_along(c->row_end - c->row_begin, c->dilation);
}
INLINE int32_t tiles_across(const cint8_winograd_convolution *c) {
    return tiles_along(c->column_end - c->column_begin, c->dilation);
}

INLINE int64_t tile_count(const cint8_winograd_convolution *c) {
    return (int64_t)c->batch * tiles_down(c) * tiles_across(c);
}

int cint8_winograd_supported(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? 1 : 0;
}

size_t cint8_winograd_weights_count(int32_t outputs, int32_t channels) {
    return (size_t)16 * outputs * channels;
}

// Layout of the transformed weights: [plane][outputs / 16][channels / 2][16 outputs][2 channels], so that one
// 256-bit load holds 8 outputs × 2 neighbouring channels, the pairs `vpmaddwd` multiplies and adds.
INLINE size_t weight_index(int32_t plane, int32_t o, int32_t c, int32_t outputs, int32_t channels) {
    return (((size_t)plane * (outputs / 16) + o / 16) * (channels / 2) + c / 2) * 32 + (o % 16) * 2 + (c & 1);
}

int64_t cint8_winograd_weights(const int8_t *w, int32_t outputs, int32_t channels, int16_t *transformed) {
    int64_t largest = 0;
    for (int32_t o = 0; o < outputs; o++) {
        int64_t sum = 0;
        for (int32_t c = 0; c < channels; c++) {
            const int8_t *g = w + ((size_t)o * channels + c) * 9;
            int32_t rows[4][3];  // (2G) g, with 2G = [[2, 0, 0], [1, 1, 1], [1, −1, 1], [0, 0, 2]]
            for (int k = 0; k < 3; k++) {
                int32_t a = g[k], b = g[3 + k], e = g[6 + k];
                rows[0][k] = 2 * a; rows[1][k] = a + b + e; rows[2][k] = a - b + e; rows[3][k] = 2 * e;
            }
            for (int i = 0; i < 4; i++) {
                int32_t a = rows[i][0], b = rows[i][1], e = rows[i][2];
                int32_t v[4] = {2 * a, a + b + e, a - b + e, 2 * e};
                for (int j = 0; j < 4; j++) {
                    transformed[weight_index(4 * i + j, o, c, outputs, channels)] = (int16_t)v[j];
                }
            }
            for (int k = 0; k < 9; k++) sum += g[k] < 0 ? -g[k] : g[k];
        }
        if (sum > largest) largest = sum;
    }
    return largest;
}

int64_t cint8_winograd_chunks(const cint8_winograd_convolution *conv) {
    return (tile_count(conv) + kChunkTiles - 1) / kChunkTiles;
}

/// Scratch: the transformed inputs [16][kChunkTiles][channels] (int16), then the products of one group of
/// outputs [16][kChunkTiles][kGroup] (int32).
static size_t input_bytes(const cint8_winograd_convolution *conv) {
    return (size_t)16 * kChunkTiles * conv->channels * sizeof(int16_t);
}

size_t cint8_winograd_scratch_bytes(const cint8_winograd_convolution *conv) {
    return input_bytes(conv) + (size_t)16 * kChunkTiles * kGroup * sizeof(int32_t);
}

/// Where tile `t` (image-major over the batch) sits: its image and first output row and column.
typedef struct { int32_t image, row, column; } tile_place;

INLINE tile_place place(const cint8_winograd_convolution *conv, int64_t t) {
    int32_t across = tiles_across(conv), down = tiles_down(conv);
    tile_place p;
    p.image = (int32_t)(t / ((int64_t)across * down));
    int64_t r = t % ((int64_t)across * down);
    p.row = conv->row_begin + tile_first((int32_t)(r / across), conv->dilation);
    p.column = conv->column_begin + tile_first((int32_t)(r % across), conv->dilation);
    return p;
}

/// Bᵀ d along one axis: Bᵀ = [[1, 0, −1, 0], [0, 1, 1, 0], [0, −1, 1, 0], [0, 1, 0, −1]].
#define INPUT_AXIS(d0, d1, d2, d3, o0, o1, o2, o3) \
    do { o0 = _mm256_sub_epi16(d0, d2); o1 = _mm256_add_epi16(d1, d2); \
         o2 = _mm256_sub_epi16(d2, d1); o3 = _mm256_sub_epi16(d1, d3); } while (0)

/// Bᵀ d B of tile `t` into row `slot` of the 16 planes of `u` ([16][kChunkTiles][channels]); zero past the tiles.
AVX2 static void input_transform(const cint8_winograd_convolution *conv, int64_t t, int32_t slot, int16_t *u) {
    const int32_t C = conv->channels, d = conv->dilation;
    const size_t plane = (size_t)kChunkTiles * C;
    int16_t *out = u + (size_t)slot * C;
    if (t >= tile_count(conv)) {
        for (int p = 0; p < 16; p++) memset(out + p * plane, 0, (size_t)C * sizeof(int16_t));
        return;
    }
    tile_place at = place(conv, t);
    const uint8_t *rows[4], *image = conv->input + (size_t)at.image * conv->height * conv->width * C;
    int32_t columns[4];
    for (int i = 0; i < 4; i++) {
        int32_t y = at.row - d + i * d, x = at.column - d + i * d;
        rows[i] = y >= 0 && y < conv->height ? image + (size_t)y * conv->width * C : NULL;
        columns[i] = x >= 0 && x < conv->width ? x * C : -1;
    }
    for (int32_t c = 0; c < C; c += 16) {
        __m256i v[4][4];
        for (int i = 0; i < 4; i++) {
            for (int j = 0; j < 4; j++) {
                v[i][j] = rows[i] && columns[j] >= 0
                    ? _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(rows[i] + columns[j] + c)))
                    : _mm256_setzero_si256();
            }
        }
        __m256i r[4][4];
        for (int j = 0; j < 4; j++) INPUT_AXIS(v[0][j], v[1][j], v[2][j], v[3][j], r[0][j], r[1][j], r[2][j], r[3][j]);
        for (int i = 0; i < 4; i++) {
            __m256i o0, o1, o2, o3;
            INPUT_AXIS(r[i][0], r[i][1], r[i][2], r[i][3], o0, o1, o2, o3);
            _mm256_storeu_si256((__m256i *)(out + (4 * i + 0) * plane + c), o0);
            _mm256_storeu_si256((__m256i *)(out + (4 * i + 1) * plane + c), o1);
            _mm256_storeu_si256((__m256i *)(out + (4 * i + 2) * plane + c), o2);
            _mm256_storeu_si256((__m256i *)(out + (4 * i + 3) * plane + c), o3);
        }
    }
}

/// m[i][0..15] = Σ over channel pairs of u[i] · w for 6 tiles × 16 outputs: `u` holds the 6 tiles' rows (stride
/// `ldu` int16), `w` the 16 outputs' pairs (32 int16 a pair of channels), `pairs` channel pairs; rows of `m` are
/// `ldm` int32 apart.
#define ROW(i) do { \
        __m256i b = _mm256_set1_epi32(*(const int32_t *)(u + (i) * ldu + 2 * k)); \
        a##i##0 = _mm256_add_epi32(a##i##0, _mm256_madd_epi16(w0, b)); \
        a##i##1 = _mm256_add_epi32(a##i##1, _mm256_madd_epi16(w1, b)); } while (0)
#define STORE(i) do { _mm256_storeu_si256((__m256i *)(m + (i) * ldm), a##i##0); \
                      _mm256_storeu_si256((__m256i *)(m + (i) * ldm + 8), a##i##1); } while (0)
AVX2 static void product_6x16(const int16_t *u, size_t ldu, const int16_t *w, int32_t pairs, int32_t *m, size_t ldm) {
    __m256i a00 = _mm256_setzero_si256(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00,
            a30 = a00, a31 = a00, a40 = a00, a41 = a00, a50 = a00, a51 = a00;
    for (int32_t k = 0; k < pairs; k++) {
        __m256i w0 = _mm256_loadu_si256((const __m256i *)(w + 32 * k));
        __m256i w1 = _mm256_loadu_si256((const __m256i *)(w + 32 * k + 16));
        ROW(0); ROW(1); ROW(2); ROW(3); ROW(4); ROW(5);
    }
    STORE(0); STORE(1); STORE(2); STORE(3); STORE(4); STORE(5);
}
#undef ROW
#undef STORE

/// Aᵀ m along one axis: Aᵀ = [[1, 1, 1, 0], [0, 1, −1, −1]].
#define OUTPUT_AXIS(m0, m1, m2, m3, o0, o1) \
    do { o0 = _mm256_add_epi32(_mm256_add_epi32(m0, m1), m2); \
         o1 = _mm256_sub_epi32(_mm256_sub_epi32(m1, m2), m3); } while (0)

/// The epilogue of 8 output channels (oneDNN 2.6's order): (float)sum + bias, × scale, activation, then stored
/// as f32, or saturated, rounded to nearest even and narrowed.
AVX2 INLINE void finish(const cint8_winograd_convolution *conv, __m256i four_sums, __m256 bias, __m256 scale,
                        size_t element) {
    __m256 v = _mm256_cvtepi32_ps(_mm256_srai_epi32(four_sums, 2));
    v = _mm256_mul_ps(_mm256_add_ps(v, bias), scale);
    if (conv->activation == cint8_winograd_relu) {
        v = _mm256_max_ps(v, _mm256_setzero_ps());
    } else if (conv->activation == cint8_winograd_clip) {
        v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(conv->low)), _mm256_set1_ps(conv->high));
    }
    switch (conv->destination_type) {
    case cint8_winograd_f32:
        _mm256_storeu_ps((float *)conv->output + element, v);
        break;
    case cint8_winograd_u8: {
        v = _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), _mm256_set1_ps(255));
        __m256i i = _mm256_cvtps_epi32(v);
        __m128i h = _mm_packus_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
        _mm_storel_epi64((__m128i *)((uint8_t *)conv->output + element), _mm_packus_epi16(h, h));
        break;
    }
    case cint8_winograd_s8: {
        v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-128)), _mm256_set1_ps(127));
        __m256i i = _mm256_cvtps_epi32(v);
        __m128i h = _mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
        _mm_storel_epi64((__m128i *)((int8_t *)conv->output + element), _mm_packs_epi16(h, h));
        break;
    }
    }
}

/// Aᵀ M A of tile `t` (row `slot` of the 16 planes of `m`, [16][kChunkTiles][kGroup]) for the outputs
/// [first, first + count), through the epilogue; outputs past the rectangle computed are dropped.
AVX2 static void output_transform(const cint8_winograd_convolution *conv, int64_t t, int32_t slot,
                                  const int32_t *m, int32_t first, int32_t count) {
    const int32_t d = conv->dilation, H = conv->height, W = conv->width, K = conv->outputs;
    const size_t plane = (size_t)kChunkTiles * kGroup;
    tile_place at = place(conv, t);
    const int rowValid[2] = {at.row < conv->row_end, at.row + d < conv->row_end};
    const int columnValid[2] = {at.column < conv->column_end, at.column + d < conv->column_end};
    for (int32_t o = 0; o < count; o += 8) {
        const int32_t *p = m + (size_t)slot * kGroup + o;
        __m256i v[16];
        for (int q = 0; q < 16; q++) v[q] = _mm256_loadu_si256((const __m256i *)(p + q * plane));
        __m256i s[2][4];
        for (int j = 0; j < 4; j++) OUTPUT_AXIS(v[j], v[4 + j], v[8 + j], v[12 + j], s[0][j], s[1][j]);
        __m256 bias = _mm256_loadu_ps(conv->bias + first + o), scale = _mm256_loadu_ps(conv->scales + first + o);
        for (int a = 0; a < 2; a++) {
            __m256i y[2];
            OUTPUT_AXIS(s[a][0], s[a][1], s[a][2], s[a][3], y[0], y[1]);
            for (int b = 0; b < 2; b++) {
                if (!rowValid[a] || !columnValid[b]) continue;
                size_t pixel = ((size_t)at.image * H + at.row + a * d) * W + at.column + b * d;
                finish(conv, y[b], bias, scale, pixel * K + first + o);
            }
        }
    }
}

AVX2 void cint8_winograd_run(const cint8_winograd_convolution *conv, int64_t first, int64_t end, void *scratch) {
    const int32_t C = conv->channels, K = conv->outputs;
    int16_t *u = scratch;
    int32_t *m = (int32_t *)((char *)scratch + input_bytes(conv));
    const int64_t tiles = tile_count(conv);
    for (int64_t chunk = first; chunk < end; chunk++) {
        const int64_t t0 = chunk * kChunkTiles;
        for (int32_t slot = 0; slot < kChunkTiles; slot++) input_transform(conv, t0 + slot, slot, u);
        const int32_t used = (int32_t)(tiles - t0 < kChunkTiles ? tiles - t0 : kChunkTiles);
        const int32_t groups = (used + kRows - 1) / kRows;
        for (int32_t g = 0; g < K; g += kGroup) {
            const int32_t count = K - g < kGroup ? K - g : kGroup;
            for (int plane = 0; plane < 16; plane++) {
                const int16_t *up = u + (size_t)plane * kChunkTiles * C;
                int32_t *mp = m + (size_t)plane * kChunkTiles * kGroup;
                for (int32_t o = 0; o < count; o += 16) {
                    const int16_t *w = conv->weights + weight_index(plane, g + o, 0, K, C);
                    for (int32_t r = 0; r < groups; r++) {
                        product_6x16(up + (size_t)r * kRows * C, (size_t)C, w, C / 2,
                                     mp + (size_t)r * kRows * kGroup + o, kGroup);
                    }
                }
            }
            for (int32_t slot = 0; slot < used; slot++) output_transform(conv, t0 + slot, slot, m, g, count);
        }
    }
}
