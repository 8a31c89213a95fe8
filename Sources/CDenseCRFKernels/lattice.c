// The permutohedral lattice's construction (Adams, Baek, Davis 2010) as Krähenbühl's `Permutohedral::init`
// builds it on pydensecrf's SSE path: elevation onto Σ x = 0, the nearest remainder-0 point rounded to nearest
// (ties to even), the simplex's rank, barycentric weights, vertices numbered in the order points first reach
// them, and each vertex's two neighbours along every lattice axis. Scalar code, one build for every CPU; no
// fused multiply-adds, so the arithmetic is pydensecrf's operation for operation.
#include "CDenseCRFKernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#pragma clang fp contract(off)

/// Open addressing over keys of `d` 16-bit coordinates; entries numbered in insertion order. Keys of up to four
/// coordinates are compared as one packed 64-bit word (exact); longer ones by a 64-bit hash, then coordinates.
typedef struct {
    int32_t d;
    int64_t count, capacity, slots;  // slots: a power of two
    int16_t *keys;
    uint64_t *signatures;
    int32_t *table;
} hash_table;

#define INLINE static inline __attribute__((always_inline))

/// `d` is the table's (a constant where the caller is specialised for one dimension).
INLINE uint64_t signature(const int16_t *key, const int32_t d) {
    uint64_t packed = 0;
    if (d <= 4) {
        for (int32_t i = 0; i < d; i++) packed |= (uint64_t)(uint16_t)key[i] << (16 * i);
    } else {
        for (int32_t i = 0; i < d; i++) packed = (packed ^ (uint16_t)key[i]) * 0x100000001B3ull;
    }
    return packed;
}

static int64_t slot_of(const hash_table *h, uint64_t signature) {
    return (int64_t)((signature * 0x9E3779B97F4A7C15ull) >> 32) & (h->slots - 1);
}

static int table_init(hash_table *h, int32_t d, int64_t expected) {
    h->d = d;
    h->count = 0;
    h->slots = 64;
    while (h->slots < 2 * expected) h->slots *= 2;
    h->capacity = expected + 10;
    h->table = malloc((size_t)h->slots * sizeof(int32_t));
    h->keys = malloc((size_t)(h->capacity * d) * sizeof(int16_t));
    h->signatures = malloc((size_t)h->capacity * sizeof(uint64_t));
    if (!h->table || !h->keys || !h->signatures) return 0;
    memset(h->table, 0xFF, (size_t)h->slots * sizeof(int32_t));
    return 1;
}

static void table_free(hash_table *h) {
    free(h->table);
    free(h->keys);
    free(h->signatures);
}

static int table_grow(hash_table *h) {
    int32_t *larger = malloc((size_t)(2 * h->slots) * sizeof(int32_t));
    if (!larger) return 0;
    free(h->table);
    h->table = larger;
    h->slots *= 2;
    memset(h->table, 0xFF, (size_t)h->slots * sizeof(int32_t));
    for (int64_t entry = 0; entry < h->count; entry++) {
        int64_t slot = slot_of(h, h->signatures[entry]);
        while (h->table[slot] >= 0) slot = (slot + 1) & (h->slots - 1);
        h->table[slot] = (int32_t)entry;
    }
    return 1;
}

/// The entry number of `key`, inserting it when `create`; −1 when absent and not created, −2 out of memory.
/// `d` is `h->d`.
INLINE int64_t table_find(hash_table *h, const int16_t *key, int create, const int32_t d) {
    if (2 * h->count >= h->slots && !table_grow(h)) return -2;
    const uint64_t wanted = signature(key, d);
    int64_t slot = slot_of(h, wanted);
    for (;;) {
        const int64_t entry = h->table[slot];
        if (entry < 0) {
            if (!create) return -1;
            if (h->count == h->capacity) {
                int16_t *keys = realloc(h->keys, (size_t)(2 * h->capacity * h->d) * sizeof(int16_t));
                if (!keys) return -2;
                h->keys = keys;
                uint64_t *signatures = realloc(h->signatures, (size_t)(2 * h->capacity) * sizeof(uint64_t));
                if (!signatures) return -2;
                h->signatures = signatures;
                h->capacity *= 2;
            }
            memcpy(h->keys + h->count * d, key, (size_t)d * sizeof(int16_t));
            h->signatures[h->count] = wanted;
            h->table[slot] = (int32_t)h->count;
            return h->count++;
        }
        if (h->signatures[entry] == wanted) {
            if (d <= 4 || memcmp(h->keys + entry * d, key, (size_t)d * sizeof(int16_t)) == 0) {
                return entry;
            }
        }
        slot = (slot + 1) & (h->slots - 1);
    }
}

/// x rounded to the nearest integer, ties to even, for |x| < 2²²: adding and subtracting 1.5 × 2²³ leaves the
/// rounded value (float arithmetic, no contraction; as `_mm_round_ps` with round-to-nearest).
static inline float round_even(float x) {
    return (x + 12582912.0f) - 12582912.0f;
}

/// `crf_lattice_build`'s body; inlined with a constant `d` for the usual dimensions, so its per-point loops
/// unroll and its small arrays live in registers (the operations and their order are the same for every `d`).
INLINE int build_body(const float *features, int64_t n, const int32_t d, int32_t *offsets, float *weights,
                      int64_t *vertex_count, int32_t **neighbours_out) {
    const int32_t corners = d + 1;
    hash_table table;
    if (!table_init(&table, d, n / 4 > 64 ? n / 4 : 64)) {
        table_free(&table);
        return -1;
    }
    float elevated[corners], remainder0[corners], barycentric[corners + 1], scale[d];
    int32_t canonical[corners * corners], rank[corners], last_remainder[corners], last_rank[corners];
    int32_t remainder_ints[corners];
    int16_t key[corners];
    for (int32_t r = 0; r <= d; r++) {
        for (int32_t i = 0; i <= d; i++) canonical[r * corners + i] = i <= d - r ? r : r - corners;
    }
    for (int32_t i = 0; i < corners; i++) last_remainder[i] = last_rank[i] = 0;
    last_rank[0] = -1;  // no previous point
    const float inverse_standard_deviation = (float)(sqrt(2.0 / 3.0) * (double)corners);
    for (int32_t j = 0; j < d; j++) {
        scale[j] = (float)(1.0 / sqrt((double)((j + 2) * (j + 1))) * (double)inverse_standard_deviation);
    }
    const float down = 1.0f / (float)corners, up = (float)corners;

    for (int64_t point = 0; point < n; point++) {
        int32_t *point_offsets = offsets + point * corners;
        float *point_weights = weights + point * corners;
        // Elevate onto the hyperplane Σ x = 0 in d + 1 dimensions.
        float sum = 0;
        for (int32_t j = d; j > 0; j--) {
            const float scaled = features[point * d + j - 1] * scale[j - 1];
            elevated[j] = sum - (float)j * scaled;
            sum += scaled;
        }
        elevated[0] = sum;
        // The nearest remainder-0 point, then the simplex's permutation (rank).
        float total = 0;
        for (int32_t i = 0; i <= d; i++) {
            const float v = round_even(down * elevated[i]);
            remainder0[i] = v * up;
            total += v;
            rank[i] = 0;
        }
        for (int32_t i = 0; i < d; i++) {
            const float di = elevated[i] - remainder0[i];
            for (int32_t j = i + 1; j <= d; j++) {
                if (di < elevated[j] - remainder0[j]) rank[i]++; else rank[j]++;
            }
        }
        const int32_t shift = (int32_t)total;
        for (int32_t i = 0; i <= d; i++) {
            rank[i] += shift;
            if (rank[i] < 0) {
                rank[i] += corners;
                remainder0[i] += up;
            } else if (rank[i] >= corners) {
                rank[i] -= corners;
                remainder0[i] -= up;
            }
        }
        for (int32_t i = 0; i <= d + 1; i++) barycentric[i] = 0;
        for (int32_t i = 0; i <= d; i++) {
            const float v = (elevated[i] - remainder0[i]) * down;
            barycentric[d - rank[i]] += v;
            barycentric[d - rank[i] + 1] -= v;
        }
        barycentric[0] += 1 + barycentric[d + 1];
        // The corners' keys depend only on remainder0 and rank over the first d coordinates: a point in the
        // same simplex as the one before reuses its vertices without hashing.
        int same = 1;
        for (int32_t i = 0; i < d; i++) {
            remainder_ints[i] = (int32_t)remainder0[i];
            if (remainder_ints[i] != last_remainder[i] || rank[i] != last_rank[i]) same = 0;
        }
        if (same) {
            for (int32_t r = 0; r <= d; r++) {
                point_offsets[r] = point_offsets[r - corners];
                point_weights[r] = barycentric[r];
            }
            continue;
        }
        for (int32_t i = 0; i < d; i++) {
            last_remainder[i] = remainder_ints[i];
            last_rank[i] = rank[i];
        }
        for (int32_t r = 0; r <= d; r++) {
            for (int32_t i = 0; i < d; i++) {
                key[i] = (int16_t)(remainder_ints[i] + canonical[r * corners + rank[i]]);
            }
            const int64_t entry = table_find(&table, key, 1, d);
            if (entry < 0) {
                table_free(&table);
                return -1;
            }
            point_offsets[r] = (int32_t)(entry + 1);
            point_weights[r] = barycentric[r];
        }
    }

    const int64_t m = table.count;
    int32_t *neighbours = malloc((size_t)(corners * m * 2 > 0 ? corners * m * 2 : 1) * sizeof(int32_t));
    if (!neighbours) {
        table_free(&table);
        return -1;
    }
    int16_t lower[corners], upper[corners];
    for (int32_t j = 0; j <= d; j++) {
        for (int64_t vertex = 0; vertex < m; vertex++) {
            const int16_t *vertex_key = table.keys + vertex * d;
            for (int32_t k = 0; k < d; k++) {
                lower[k] = (int16_t)(vertex_key[k] - 1);
                upper[k] = (int16_t)(vertex_key[k] + 1);
            }
            if (j < d) {
                lower[j] = (int16_t)(vertex_key[j] + d);
                upper[j] = (int16_t)(vertex_key[j] - d);
            }
            const int64_t first = table_find(&table, lower, 0, d), second = table_find(&table, upper, 0, d);
            if (first < -1 || second < -1) {
                free(neighbours);
                table_free(&table);
                return -1;
            }
            neighbours[(j * m + vertex) * 2] = (int32_t)(first + 1);
            neighbours[(j * m + vertex) * 2 + 1] = (int32_t)(second + 1);
        }
    }
    table_free(&table);
    *vertex_count = m;
    *neighbours_out = neighbours;
    return 0;
}

int crf_lattice_build(const float *features, int64_t n, int32_t d, int32_t *offsets, float *weights,
                      int64_t *vertex_count, int32_t **neighbours_out) {
    switch (d) {  // 2-D and 3-D positions, plus one or three intensity channels
    case 2: return build_body(features, n, 2, offsets, weights, vertex_count, neighbours_out);
    case 3: return build_body(features, n, 3, offsets, weights, vertex_count, neighbours_out);
    case 4: return build_body(features, n, 4, offsets, weights, vertex_count, neighbours_out);
    case 5: return build_body(features, n, 5, offsets, weights, vertex_count, neighbours_out);
    case 6: return build_body(features, n, 6, offsets, weights, vertex_count, neighbours_out);
    default: return build_body(features, n, d, offsets, weights, vertex_count, neighbours_out);
    }
}

int crf_lattice_normalisation(const int32_t *offsets, const float *weights, int64_t point_count,
                              int32_t dimension, const int32_t *neighbours, int64_t vertex_count,
                              float *normalisation) {
    const int32_t corners = dimension + 1;
    const int64_t rows = vertex_count + 1;
    float *values = calloc((size_t)rows, sizeof(float)), *scratch = calloc((size_t)rows, sizeof(float));
    if (!values || !scratch) {
        free(values);
        free(scratch);
        return -1;
    }
    for (int64_t e = 0; e < point_count * corners; e++) values[offsets[e]] += weights[e];
    float *old = values, *new = scratch;
    for (int32_t axis = 0; axis <= dimension; axis++) {
        const int32_t *pairs = neighbours + axis * vertex_count * 2;
        for (int64_t vertex = 0; vertex < vertex_count; vertex++) {
            new[vertex + 1] = old[vertex + 1] + 0.5f * (old[pairs[2 * vertex]] + old[pairs[2 * vertex + 1]]);
        }
        float *swap = old;
        old = new;
        new = swap;
    }
    double power = 1;
    for (int32_t i = 0; i < dimension; i++) power *= 2;
    const float alpha = (float)(1 / (1 + 1 / power));
    for (int64_t point = 0; point < point_count; point++) {
        float sum = 0;
        for (int32_t r = 0; r < corners; r++) {
            const int64_t e = point * corners + r;
            sum += weights[e] * alpha * old[offsets[e]];
        }
        normalisation[point] = 1.0f / sqrtf(sum + 1e-20f);
    }
    free(values);
    free(scratch);
    return 0;
}
