// Exact int8 convolutions by Winograd's F(2×2, 3×3) on AVX2 (no outside library; used by Swift's `DeepLab`,
// `Int8WinogradConvolution`, only). The functions are compiled with `__attribute__((target("avx2")))` and are
// called only where oneDNN's effective ISA is AVX2 (`ConvolutionStrategyTable`), never because the build
// machine has it.
//
// Why it is exact: with the integer matrices Bᵀ (entries 0, ±1), 2G (entries 0, 1, ±1, 2) and Aᵀ (0, ±1), a
// u8 input tile becomes 16 values of at most 4 · 255 in magnitude and an s8 kernel 16 values of at most 9 · 128,
// both 16-bit; their products are summed in 32 bits by `vpmaddwd` + `vpaddd` (16 multiply-adds an instruction,
// against 32 for two of oneDNN's u8 × s8 instructions, but 2.25-fold fewer products), and Aᵀ M A is 4 times the
// convolution's integer sum. All of it is arithmetic modulo 2³², so the sum comes out exact whenever 4 · |sum|
// < 2³¹: `cint8_winograd_weights` returns the largest Σ|w| of an output channel, from which the caller checks
// 255 · Σ|w| < 2²⁹ before choosing this path. The f32 epilogue then does what oneDNN 2.6's int8 kernels do:
// (float)sum + bias, times the output channel's scale, ReLU or clip, rounded to nearest even and saturated.
//
// A convolution dilated by d is the same computation on the d × d interleaved sub-grids of its input: a tile
// reads rows y − d, y, y + d, y + 2d and writes outputs y and y + d (as the f32 `WinogradConvolution`).
#ifndef CINT8WINOGRAD_H
#define CINT8WINOGRAD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What the epilogue applies after the scale.
typedef enum {
    cint8_winograd_identity = 0,
    cint8_winograd_relu = 1,     // max(x, 0)
    cint8_winograd_clip = 2,     // min(max(x, low), high)
} cint8_winograd_activation;

/// The destination's type.
typedef enum {
    cint8_winograd_f32 = 0,
    cint8_winograd_u8 = 1,
    cint8_winograd_s8 = 2,
} cint8_winograd_destination;

/// One 3×3 convolution, stride 1, padding equal to the dilation, channels last (NHWC) on both sides, the
/// output of the input's extent.
typedef struct {
    int32_t batch, height, width;
    int32_t channels;               // input channels, a multiple of 16
    int32_t outputs;                // output channels, a multiple of 16
    int32_t dilation;
    // The outputs computed: rows [row_begin, row_end) × columns [column_begin, column_end), all of them or one
    // rectangle (a padding-free plan's all-taps centre); inputs outside the image read as zero.
    int32_t row_begin, row_end, column_begin, column_end;
    const uint8_t *input;           // [batch, height, width, channels] u8
    const int16_t *weights;         // from cint8_winograd_weights
    const float *bias;              // [outputs], in the accumulator's units (added before the scale)
    const float *scales;            // [outputs]
    cint8_winograd_activation activation;
    float low, high;                // the clip's bounds
    cint8_winograd_destination destination_type;
    void *output;                   // [batch, height, width, outputs] of destination_type
} cint8_winograd_convolution;

/// 1 when this CPU (and its OS) runs AVX2 (`__builtin_cpu_supports`).
int cint8_winograd_supported(void);

/// The Winograd-domain weights' element count (int16) for `outputs` × `channels`.
size_t cint8_winograd_weights_count(int32_t outputs, int32_t channels);

/// Writes (2G) w (2G)ᵀ of the s8 kernel `w` ([outputs, channels, 3, 3]) into `transformed`
/// (`cint8_winograd_weights_count` values) in the layout the matrix products read, and returns the largest sum
/// of |w| over one output channel's taps.
int64_t cint8_winograd_weights(const int8_t *w, int32_t outputs, int32_t channels, int16_t *transformed);

/// The number of chunks of tiles the convolution is cut into; chunks are independent.
int64_t cint8_winograd_chunks(const cint8_winograd_convolution *conv);

/// Bytes of scratch one caller of `cint8_winograd_run` needs (64-byte aligned).
size_t cint8_winograd_scratch_bytes(const cint8_winograd_convolution *conv);

/// Computes the outputs of chunks [first, end) with `scratch` (`cint8_winograd_scratch_bytes`, 64-byte aligned).
/// Different chunks write different outputs, so callers may run disjoint ranges at the same time.
void cint8_winograd_run(const cint8_winograd_convolution *conv, int64_t first, int64_t end, void *scratch);

#ifdef __cplusplus
}
#endif

#endif
