// Exact int8 Winograd F(2×2, 3×3) and F(4×4, 3×3) on AVX2: see the header. With n = tile + 2 input values a
// side, planes are numbered n·i + j for row i, column j of an n × n Winograd-domain tile, in the input transform,
// the weights and the output transform alike.
#include "CInt8Winograd.h"

#include <immintrin.h>
#include <string.h>

#define AVX2 __attribute__((target("avx2")))
#define INLINE static inline __attribute__((always_inline))

enum {
    kRows = 6,              // tiles per micro-kernel call
    kGroup = 64,            // output channels per pass of the matrix products and the output transform
};

/// Tiles per chunk: 48 of F(2×2) (192 outputs), 24 of F(4×4) (384 outputs, 36 planes).
INLINE int32_t chunk_tiles(const cint8_winograd_convolution *c) { return c->tile == 4 ? 4 * kRows : 8 * kRows; }

/// The Winograd domain's values a side (tile + 2) and its planes.
INLINE int32_t side(int32_t tile) { return tile + 2; }
INLINE int32_t planes(int32_t tile) { return side(tile) * side(tile); }

/// Tiles along an extent: each block of tile·d rows (or columns) holds d tiles, one per sub-grid.
INLINE int32_t tiles_along(int32_t extent, int32_t tile, int32_t d) {
    return (extent + tile * d - 1) / (tile * d) * d;
}

/// The first of a tile's output rows (or columns); the others follow d apart.
INLINE int32_t tile_first(int32_t index, int32_t tile, int32_t d) { return index / d * tile * d + index % d; }

/// Tile rows and columns over the outputs computed.
INLINE int32_t tiles_down(const cint8_winograd_convolution *c) {
    return tiles_along(c->row_end - c->row_begin, c->tile, c->dilation);
}
INLINE int32_t tiles_across(const cint8_winograd_convolution *c) {
    return tiles_along(c->column_end - c->column_begin, c->tile, c->dilation);
}

INLINE int64_t tile_count(const cint8_winograd_convolution *c) {
    return (int64_t)c->batch * tiles_down(c) * tiles_across(c);
}

int cint8_winograd_supported(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? 1 : 0;
}

size_t cint8_winograd_weights_count(int32_t outputs, int32_t channels, int32_t tile) {
    return (size_t)planes(tile) * outputs * channels;
}

// Layout of the transformed weights: [plane][outputs / 16][channels / 2][16 outputs][2 channels], so that one
// 256-bit load holds 8 outputs × 2 neighbouring channels, the pairs `vpmaddwd` multiplies and adds.
INLINE size_t weight_index(int32_t plane, int32_t o, int32_t c, int32_t outputs, int32_t channels) {
    return (((size_t)plane * (outputs / 16) + o / 16) * (channels / 2) + c / 2) * 32 + (o % 16) * 2 + (c & 1);
}

/// The integer G' of a tile size: F(2×2) 2G = [[2, 0, 0], [1, 1, 1], [1, −1, 1], [0, 0, 2]]; F(4×4) G with each
/// row scaled to integers (by 4, 6, 6, 24, 24, 1) = [[1, 0, 0], [−1, −1, −1], [−1, 1, −1], [1, 2, 4],
/// [1, −2, 4], [0, 0, 1]]; the output transform carries the inverse scales.
static const int32_t kG2[4][3] = {{2, 0, 0}, {1, 1, 1}, {1, -1, 1}, {0, 0, 2}};
static const int32_t kG4[6][3] = {{1, 0, 0}, {-1, -1, -1}, {-1, 1, -1}, {1, 2, 4}, {1, -2, 4}, {0, 0, 1}};

void cint8_winograd_weights(const int8_t *w, int32_t outputs, int32_t channels, int32_t tile,
                            int16_t *transformed) {
    const int32_t n = side(tile);
    const int32_t (*g)[3] = tile == 4 ? kG4 : kG2;
    for (int32_t o = 0; o < outputs; o++) {
        for (int32_t c = 0; c < channels; c++) {
            const int8_t *k = w + ((size_t)o * channels + c) * 9;
            int32_t rows[6][3];  // G' k
            for (int i = 0; i < n; i++) {
                for (int x = 0; x < 3; x++) rows[i][x] = g[i][0] * k[x] + g[i][1] * k[3 + x] + g[i][2] * k[6 + x];
            }
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < n; j++) {  // (G' k G'ᵀ)[i][j]
                    int32_t v = g[j][0] * rows[i][0] + g[j][1] * rows[i][1] + g[j][2] * rows[i][2];
                    transformed[weight_index(n * i + j, o, c, outputs, channels)] = (int16_t)v;
                }
            }
        }
    }
}

void cint8_winograd_weight_sums(const int8_t *w, int32_t outputs, int32_t channels, int32_t *sums) {
    for (size_t pair = 0; pair < (size_t)outputs * channels; pair++) {
        int32_t sum = 0;
        for (int x = 0; x < 9; x++) sum += w[pair * 9 + x] < 0 ? -w[pair * 9 + x] : w[pair * 9 + x];
        sums[pair] = sum;
    }
}

AVX2 void cint8_winograd_channel_max(const uint8_t *input, int64_t pixels, int32_t channels,
                                     uint8_t *largest) {
    memset(largest, 0, (size_t)channels);
    for (int64_t p = 0; p < pixels; p++) {
        const uint8_t *row = input + (size_t)p * channels;
        for (int32_t c = 0; c < channels; c += 16) {
            __m128i m = _mm_max_epu8(_mm_loadu_si128((const __m128i *)(largest + c)),
                                     _mm_loadu_si128((const __m128i *)(row + c)));
            _mm_storeu_si128((__m128i *)(largest + c), m);
        }
    }
}

int64_t cint8_winograd_sum_bound(const int32_t *sums, const uint8_t *largest, int32_t outputs,
                                 int32_t channels) {
    int64_t bound = 0;
    for (int32_t o = 0; o < outputs; o++) {
        int64_t b = 0;
        for (int32_t c = 0; c < channels; c++) b += (int64_t)sums[(size_t)o * channels + c] * largest[c];
        if (b > bound) bound = b;
    }
    return bound;
}

int64_t cint8_winograd_chunks(const cint8_winograd_convolution *conv) {
    return (tile_count(conv) + chunk_tiles(conv) - 1) / chunk_tiles(conv);
}

/// Scratch: the transformed inputs [planes][chunk tiles][channels] (int16), then the products of one group of
/// outputs [planes][chunk tiles][kGroup] (int32).
static size_t input_bytes(const cint8_winograd_convolution *conv) {
    return (size_t)planes(conv->tile) * chunk_tiles(conv) * conv->channels * sizeof(int16_t);
}

size_t cint8_winograd_scratch_bytes(const cint8_winograd_convolution *conv) {
    return input_bytes(conv) + (size_t)planes(conv->tile) * chunk_tiles(conv) * kGroup * sizeof(int32_t);
}

/// Where tile `t` (image-major over the batch) sits: its image and first output row and column.
typedef struct { int32_t image, row, column; } tile_place;

INLINE tile_place place(const cint8_winograd_convolution *conv, int64_t t) {
    int32_t across = tiles_across(conv), down = tiles_down(conv);
    tile_place p;
    p.image = (int32_t)(t / ((int64_t)across * down));
    int64_t r = t % ((int64_t)across * down);
    p.row = conv->row_begin + tile_first((int32_t)(r / across), conv->tile, conv->dilation);
    p.column = conv->column_begin + tile_first((int32_t)(r % across), conv->tile, conv->dilation);
    return p;
}

#define ADD16 _mm256_add_epi16
#define SUB16 _mm256_sub_epi16
#define SHL16 _mm256_slli_epi16

/// Bᵀ d along one axis of F(2×2): Bᵀ = [[1, 0, −1, 0], [0, 1, 1, 0], [0, −1, 1, 0], [0, 1, 0, −1]].
AVX2 INLINE void input_axis2(const __m256i *d, __m256i *o) {
    o[0] = SUB16(d[0], d[2]); o[1] = ADD16(d[1], d[2]); o[2] = SUB16(d[2], d[1]); o[3] = SUB16(d[1], d[3]);
}

/// Bᵀ d along one axis of F(4×4): Bᵀ = [[4, 0, −5, 0, 1, 0], [0, −4, −4, 1, 1, 0], [0, 4, −4, −1, 1, 0],
/// [0, −2, −1, 2, 1, 0], [0, 2, −1, −2, 1, 0], [0, 4, 0, −5, 0, 1]]. For u8 inputs every partial sum stays
/// within 100 · 255 in magnitude after both axes, inside 16 bits.
AVX2 INLINE void input_axis4(const __m256i *d, __m256i *o) {
    __m256i d4_minus_d2 = SUB16(d[4], d[2]);
    __m256i sum12 = ADD16(d[1], d[2]), sum34 = ADD16(d[3], d[4]);
    __m256i d1_minus_d2 = SUB16(d[1], d[2]), d4_minus_d3 = SUB16(d[4], d[3]);
    __m256i twice13 = SHL16(SUB16(d[1], d[3]), 1);
    o[0] = ADD16(SUB16(SHL16(d[0], 2), ADD16(SHL16(d[2], 2), d[2])), d[4]);
    o[1] = SUB16(sum34, SHL16(sum12, 2));
    o[2] = ADD16(SHL16(d1_minus_d2, 2), d4_minus_d3);
    o[3] = SUB16(d4_minus_d2, twice13);
    o[4] = ADD16(d4_minus_d2, twice13);
    o[5] = ADD16(SUB16(SHL16(d[1], 2), ADD16(SHL16(d[3], 2), d[3])), d[5]);
}

/// Bᵀ d B of tile `t` into row `slot` of the planes of `u` ([planes][chunk tiles][channels]); zero past the tiles.
AVX2 static void input_transform(const cint8_winograd_convolution *conv, int64_t t, int32_t slot, int16_t *u) {
    const int32_t C = conv->channels, d = conv->dilation, n = side(conv->tile);
    const size_t plane = (size_t)chunk_tiles(conv) * C;
    int16_t *out = u + (size_t)slot * C;
    if (t >= tile_count(conv)) {
        for (int p = 0; p < n * n; p++) memset(out + p * plane, 0, (size_t)C * sizeof(int16_t));
        return;
    }
    tile_place at = place(conv, t);
    const uint8_t *rows[6], *image = conv->input + (size_t)at.image * conv->height * conv->width * C;
    int32_t columns[6];
    for (int i = 0; i < n; i++) {
        int32_t y = at.row - d + i * d, x = at.column - d + i * d;
        rows[i] = y >= 0 && y < conv->height ? image + (size_t)y * conv->width * C : NULL;
        columns[i] = x >= 0 && x < conv->width ? x * C : -1;
    }
    for (int32_t c = 0; c < C; c += 16) {
        __m256i v[6][6], r[6][6], column[6], transformed[6];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                v[j][i] = rows[i] && columns[j] >= 0
                    ? _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(rows[i] + columns[j] + c)))
                    : _mm256_setzero_si256();
            }
        }
        // Along the rows of the tile (for each column j), then along its columns (for each row i).
        for (int j = 0; j < n; j++) {
            if (n == 4) input_axis2(v[j], transformed); else input_axis4(v[j], transformed);
            for (int i = 0; i < n; i++) r[i][j] = transformed[i];
        }
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) column[j] = r[i][j];
            if (n == 4) input_axis2(column, transformed); else input_axis4(column, transformed);
            for (int j = 0; j < n; j++) {
                _mm256_storeu_si256((__m256i *)(out + (n * i + j) * plane + c), transformed[j]);
            }
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

#define ADD32 _mm256_add_epi32
#define SUB32 _mm256_sub_epi32
#define SHL32 _mm256_slli_epi32

/// Aᵀ m along one axis of F(2×2): Aᵀ = [[1, 1, 1, 0], [0, 1, −1, −1]].
AVX2 INLINE void output_axis2(const __m256i *m, __m256i *o) {
    o[0] = ADD32(ADD32(m[0], m[1]), m[2]);
    o[1] = SUB32(SUB32(m[1], m[2]), m[3]);
}

/// A'ᵀ m along one axis of F(4×4), Aᵀ with its columns scaled by 24 over G's row scales (6, 4, 4, 1, 1, 24):
/// [[6, 4, 4, 1, 1, 0], [0, 4, −4, 2, −2, 0], [0, 4, 4, 4, 4, 0], [0, 4, −4, 8, −8, 24]]. Modulo 2³².
AVX2 INLINE void output_axis4(const __m256i *m, __m256i *o) {
    __m256i sum12 = SHL32(ADD32(m[1], m[2]), 2), difference12 = SHL32(SUB32(m[1], m[2]), 2);
    __m256i sum34 = ADD32(m[3], m[4]), difference34 = SUB32(m[3], m[4]);
    __m256i six0 = ADD32(SHL32(m[0], 2), SHL32(m[0], 1));
    __m256i twentyfour5 = ADD32(SHL32(m[5], 4), SHL32(m[5], 3));
    o[0] = ADD32(ADD32(six0, sum12), sum34);
    o[1] = ADD32(difference12, SHL32(difference34, 1));
    o[2] = ADD32(sum12, SHL32(sum34, 2));
    o[3] = ADD32(ADD32(difference12, SHL32(difference34, 3)), twentyfour5);
}

/// The convolution's integer sum from its multiple modulo 2³²: F(2×2) gives 4 · sum (an arithmetic shift by 2);
/// F(4×4) gives 576 · sum = 2⁶ · 9 · sum, so 9 · sum modulo 2²⁶ is the value shifted right by 6, times 9's
/// inverse modulo 2²⁶ (14913081) it is sum modulo 2²⁶, and sign extension from 26 bits recovers it while
/// |sum| < 2²⁵.
AVX2 INLINE __m256i recover(__m256i scaled, int32_t tile) {
    if (tile == 2) return _mm256_srai_epi32(scaled, 2);
    __m256i low = _mm256_mullo_epi32(_mm256_srli_epi32(scaled, 6), _mm256_set1_epi32(14913081));
    return _mm256_srai_epi32(_mm256_slli_epi32(low, 6), 6);
}

/// The epilogue of 8 output channels (oneDNN 2.6's order): (float)sum + bias, × scale, activation, then stored
/// as f32, or saturated, rounded to nearest even and narrowed.
AVX2 INLINE void finish(const cint8_winograd_convolution *conv, __m256i sum, __m256 bias, __m256 scale,
                        size_t element) {
    __m256 v = _mm256_cvtepi32_ps(sum);
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

/// Aᵀ M A of tile `t` (row `slot` of the planes of `m`, [planes][chunk tiles][kGroup]) for the outputs
/// [first, first + count), through the epilogue; outputs past the rectangle computed are dropped.
AVX2 static void output_transform(const cint8_winograd_convolution *conv, int64_t t, int32_t slot,
                                  const int32_t *m, int32_t first, int32_t count) {
    const int32_t d = conv->dilation, H = conv->height, W = conv->width, K = conv->outputs, tile = conv->tile;
    const int32_t n = side(tile);
    const size_t plane = (size_t)chunk_tiles(conv) * kGroup;
    tile_place at = place(conv, t);
    int rowValid[4], columnValid[4];
    for (int a = 0; a < tile; a++) {
        rowValid[a] = at.row + a * d < conv->row_end;
        columnValid[a] = at.column + a * d < conv->column_end;
    }
    for (int32_t o = 0; o < count; o += 8) {
        const int32_t *p = m + (size_t)slot * kGroup + o;
        __m256i s[4][6], column[6], y[4];
        // Along the rows of the tile (for each column j), then along its columns (for each output row a).
        for (int j = 0; j < n; j++) {
            for (int i = 0; i < n; i++) column[i] = _mm256_loadu_si256((const __m256i *)(p + (n * i + j) * plane));
            if (tile == 2) output_axis2(column, y); else output_axis4(column, y);
            for (int a = 0; a < tile; a++) s[a][j] = y[a];
        }
        __m256 bias = _mm256_loadu_ps(conv->bias + first + o), scale = _mm256_loadu_ps(conv->scales + first + o);
        for (int a = 0; a < tile; a++) {
            if (!rowValid[a]) continue;
            if (tile == 2) output_axis2(s[a], y); else output_axis4(s[a], y);
            for (int b = 0; b < tile; b++) {
                if (!columnValid[b]) continue;
                size_t pixel = ((size_t)at.image * H + at.row + a * d) * W + at.column + b * d;
                finish(conv, recover(y[b], tile), bias, scale, pixel * K + first + o);
            }
        }
    }
}

AVX2 void cint8_winograd_run(const cint8_winograd_convolution *conv, int64_t first, int64_t end, void *scratch) {
    const int32_t C = conv->channels, K = conv->outputs, P = planes(conv->tile), T = chunk_tiles(conv);
    int16_t *u = scratch;
    int32_t *m = (int32_t *)((char *)scratch + input_bytes(conv));
    const int64_t tiles = tile_count(conv);
    for (int64_t chunk = first; chunk < end; chunk++) {
        const int64_t t0 = chunk * T;
        for (int32_t slot = 0; slot < T; slot++) input_transform(conv, t0 + slot, slot, u);
        const int32_t used = (int32_t)(tiles - t0 < T ? tiles - t0 : T);
        const int32_t groups = (used + kRows - 1) / kRows;
        for (int32_t g = 0; g < K; g += kGroup) {
            const int32_t count = K - g < kGroup ? K - g : kGroup;
            for (int plane = 0; plane < P; plane++) {
                const int16_t *up = u + (size_t)plane * T * C;
                int32_t *mp = m + (size_t)plane * T * kGroup;
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
