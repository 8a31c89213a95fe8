// Winograd transforms for float32 convolutions: see the header.
#include "CFloatWinograd.h"

#include <string.h>

/// Eight floats, one AVX register (two SSE ones on the baseline).
typedef float v8 __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4)));
typedef int32_t v8i __attribute__((vector_size(32)));
#define SPLAT(x) ((v8){x, x, x, x, x, x, x, x})
#define LOAD(p) (*(const v8u *)(p))
#define STORE(p, x) (*(v8u *)(p) = (x))

#define NAME(x) x##_baseline
#define TARGET
#include "transforms.inc"
#undef NAME
#undef TARGET

#define NAME(x) x##_avx2
#define TARGET __attribute__((target("avx2,fma")))
#include "transforms.inc"
#undef NAME
#undef TARGET

#define NAME(x) x##_avx512
#define TARGET __attribute__((target("avx512f,avx512vl,fma")))
#include "transforms.inc"
#undef NAME
#undef TARGET

int32_t cfwino_supported(void) {
    __builtin_cpu_init();
    int32_t isas = 1 << cfwino_baseline;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) isas |= 1 << cfwino_avx2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) isas |= 1 << cfwino_avx512;
    return isas;
}

void cfwino_input(cfwino_isa isa, const cfwino_row *row, const float *image, float *v) {
    int four = row->tile == 4;
    switch (isa) {
    case cfwino_avx512: four ? input4_avx512(row, image, v) : input2_avx512(row, image, v); break;
    case cfwino_avx2: four ? input4_avx2(row, image, v) : input2_avx2(row, image, v); break;
    default: four ? input4_baseline(row, image, v) : input2_baseline(row, image, v); break;
    }
}

void cfwino_output(
    cfwino_isa isa, const cfwino_row *row, const float *m, const float *bias, cfwino_activation activation,
    float *image) {
    int four = row->tile == 4;
    switch (isa) {
    case cfwino_avx512:
        four ? output4_avx512(row, m, bias, activation, image) : output2_avx512(row, m, bias, activation, image);
        break;
    case cfwino_avx2:
        four ? output4_avx2(row, m, bias, activation, image) : output2_avx2(row, m, bias, activation, image);
        break;
    default:
        four ? output4_baseline(row, m, bias, activation, image)
             : output2_baseline(row, m, bias, activation, image);
        break;
    }
}
