// Exact int8 convolutions by Winograd's F(2×2, 3×3) and F(4×4, 3×3) on AVX2 (no outside library; used by Swift's
// `DeepLab`, `Int8Winograd`, only). The functions are compiled with `__attribute__((target("avx2")))` and
// are called only where oneDNN's effective ISA is AVX2 (`ConvolutionStrategyTable`), never because the build machine
// has it.
//
// Why it is exact: the transforms are integer matrices. F(2×2): Bᵀ (entries 0, ±1), 2G (0, ±1, 2) and Aᵀ (0, ±1); a
// u8 input tile becomes 16 values of at most 4 · 255 in magnitude and an s8 kernel 16 of at most 9 · 128, and Aᵀ M A
// is 4 times the convolution's integer sum. F(4×4): Bᵀ (entries up to 5), G with its rows scaled to integers (by 4,
// 6, 6, 24, 24, 1; entries up to 4) and Aᵀ with its columns scaled back (by 6, 4, 4, 1, 1, 24); a tile becomes 36
// values of at most 100 · 255, a kernel 36 of at most 49 · 128, and the result is 576 times the sum. All fit 16
// bits; their products are summed in 32 bits by `vpmaddwd` + `vpaddd` (16 multiply-adds an instruction, against 32
// for two of oneDNN's u8 × s8 instructions, but 2.25-fold (F(2×2)) or 4-fold (F(4×4)) fewer products). All of it is
// arithmetic modulo 2³²: F(2×2) recovers the sum while 4 · |sum| < 2³¹, F(4×4) (576 = 2⁶ · 9, 9 invertible modulo
// 2²⁶) while |sum| < 2²⁵. `cint8_winograd_sum_bound` bounds every |sum| by the weights' Σ|w| per
// input channel times that channel's largest input (`cint8_winograd_channel_max`), and the caller checks the bound
// before choosing a tile size (so the choice never changes a result, only the time). The f32 epilogue then does what oneDNN
// 2.6's int8 kernels do: (float)sum + bias, times the output channel's scale, ReLU or clip, rounded to nearest even
// and saturated.
//
// A convolution dilated by d is the same computation on the d × d interleaved sub-grids of its input: a tile of size
// m reads rows y − d, y, …, y + m·d and writes outputs y, y + d, …, y + (m − 1)·d (as the f32 `WinogradConvolution`
// does for m = 2).
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
    int32_t tile;                   // 2: F(2×2, 3×3), 4: F(4×4, 3×3)
    // The outputs computed: rows [row_begin, row_end) × columns [column_begin, column_end), all of them or one
    // rectangle (a padding-free plan's all-taps centre); inputs outside the image read as zero.
    int32_t row_begin, row_end, column_begin, column_end;
    const uint8_t *input;           // [batch, height, width, channels] u8
    const int16_t *weights;         // from cint8_winograd_weights for the same tile size
    const float *bias;              // [outputs], in the accumulator's units (added before the scale)
    const float *scales;            // [outputs]
    cint8_winograd_activation activation;
    float low, high;                // the clip's bounds
    cint8_winograd_destination destination_type;
    void *output;                   // [batch, height, width, outputs] of destination_type
} cint8_winograd_convolution;

/// 1 when this CPU (and its OS) runs AVX2 (`__builtin_cpu_supports`).
int cint8_winograd_supported(void);

/// The Winograd-domain weights' element count (int16) for `outputs` × `channels` and tile size `tile` (2, 4).
size_t cint8_winograd_weights_count(int32_t outputs, int32_t channels, int32_t tile);

/// Writes G' w G'ᵀ of the s8 kernel `w` ([outputs, channels, 3, 3]) for tile size `tile` into `transformed`
/// (`cint8_winograd_weights_count` values) in the layout the matrix products read.
void cint8_winograd_weights(const int8_t *w, int32_t outputs, int32_t channels, int32_t tile,
                            int16_t *transformed);

/// Σ over the taps of |w| for every (output, input channel) pair of the s8 kernel `w` ([outputs, channels, 3, 3])
/// into `sums` ([outputs, channels]).
void cint8_winograd_weight_sums(const int8_t *w, int32_t outputs, int32_t channels, int32_t *sums);

/// The largest value of every channel of `pixels` u8 pixels of `channels` (a multiple of 16) channels, channels
/// last, into `largest` ([channels]).
void cint8_winograd_channel_max(const uint8_t *input, int64_t pixels, int32_t channels, uint8_t *largest);

/// A bound on every output's |sum|: the largest over outputs o of Σ over channels c of sums[o, c] · largest[c].
int64_t cint8_winograd_sum_bound(const int32_t *sums, const uint8_t *largest, int32_t outputs,
                                 int32_t channels);

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
