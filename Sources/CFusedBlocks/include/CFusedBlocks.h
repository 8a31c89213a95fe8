// MobileNetV2's inverted-residual block in one pass, ours (no outside library; used by Swift's `DeepLab`,
// `FusedInvertedResidual`, `FusedStem` and `OwnDepthwiseConvolution`, only): 1 × 1 expansion, 3 × 3 depthwise,
// 1 × 1 projection and the identity, on one output row at a time; or a separable convolution (no expansion, no
// identity), or a depthwise convolution alone (no expansion, no projection). The expanded rows a depthwise row
// reads are kept in a small ring and the depthwise row itself in one buffer, so the expanded tensor (6 × the block's
// input channels, at the block's full extent) never goes to memory; only the block's input is read and its output
// written.
//
// Eval mode, float32, batch norm folded by the caller. Channels last (NHWC) on both sides. Two instruction sets,
// each compiled with its own `__attribute__((target(...)))`: AVX-512 (16 lanes) and AVX2 (8 lanes); the caller
// chooses one from oneDNN's effective ISA, never from the build machine, and may run AVX2 on an AVX-512 CPU.
// The arithmetic per output is the unfused one's up to the order of the sums (float32 rounding).
#ifndef CFUSEDBLOCKS_H
#define CFUSEDBLOCKS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    cfused_avx2 = 1,     // 8 lanes
    cfused_avx512 = 2,   // 16 lanes
} cfused_isa;

typedef enum {
    cfused_identity = 0,
    cfused_relu = 1,     // max(x, 0)
    cfused_relu6 = 2,    // min(max(x, 0), 6)
} cfused_activation;

/// A stem in place of the block's input (MobileNetV2's first block reads the stem alone): the block's input rows made
/// as they are needed, each act(bias + Σ taps · x) of a 3 × 3 convolution at stride 2 with padding 1 over `source`
/// upscaled bilinearly to `upscaled_height` × `upscaled_width` (the taps below give each upscaled row and column its
/// two source rows or columns and the second one's weight: v = a + w · (b − a), rows first). So neither the upscaled
/// image nor the stem's output goes to memory. The block's `height`, `width` and `in_channels` are the stem's output's
/// (== hidden: the block does not expand), and it has no identity; its `input` is not read.
typedef struct {
    const float *source;                     // [batch, source_height, source_width, source_channels]
    int32_t source_height, source_width, source_channels;
    int32_t upscaled_height, upscaled_width;
    const int32_t *row_first, *row_second;   // [upscaled_height] each
    const float *row_weights;                // [upscaled_height]
    const int32_t *column_first, *column_second;   // [upscaled_width] each
    const float *column_weights;             // [upscaled_width]
    const float *weights;                    // [9 · source_channels][padded in_channels], row (3ky + kx) · C + c
    const float *bias;                       // [padded in_channels]
    int32_t activation;                      // cfused_activation
} cfused_stem;

/// The data types of an int8 block's input and output.
typedef enum {
    cfused_f32 = 0,
    cfused_u8 = 1,
    cfused_s8 = 2,
} cfused_type;

/// What an int8 convolution makes of its s32 sums, as oneDNN 2.6's int8 convolutions do (float32, this order):
/// v = (float(sum) + bias) · scale, then min(max(v, low), high) (the activation's clip and the output type's range
/// together; −inf and inf without), then rounded half to even where the output is an integer type.
typedef struct {
    const float *bias;              // [padded n]: the bias in the sums' units (b · input scale · weight scale)
    const float *scales;            // [padded n]: the output scales
    const int32_t *compensation;    // [padded n]: 128 · Σ_k w[k][o] for an s8 input (read shifted to u8), or NULL
    float low, high;
} cfused_requant;

/// An int8 block (`cfused_block.int8`), on AVX-512 VNNI only (`cfused_int8_supported`): what oneDNN's int8 units
/// compute one after the other (u8 × s8 products summed exactly in s32, each unit's output rounded to the next
/// one's u8), in one pass. The 1 × 1 convolutions run on `vpdpbusd`; the expanded rows are kept as float32 values of
/// their u8 integers, so the depthwise sums (9 · 255 · 128 at most) are exact in float32 and the float32 kernel
/// computes them (the block's `depthwise_weights` then hold the s8 taps as floats and `depthwise_bias` zeros). The
/// block's float32 `input`, `output` and 1 × 1 weights are not read.
typedef struct {
    const void *input;              // [batch, height, width, in_channels] of `input_type` (u8 or s8)
    int32_t input_type;
    void *output;                   // [batch, out_height, out_width, out_channels] of `output_type`
    int32_t output_type;
    const int8_t *expand_weights;   // cfused_pack_s8 of [in_channels][hidden] (expands only)
    const int8_t *project_weights;  // cfused_pack_s8 of [hidden][out_channels]
    cfused_requant expand, depthwise, project;
    float residual_scale;           // the identity's integers times this are added to the projection before its clip
} cfused_int8;

/// One block. Channel counts are any positive numbers: inside, hidden and output channels are padded to whole
/// vectors (`cfused_padded`); the packed weights and the biases come padded with zeros.
typedef struct {
    int32_t batch, height, width;            // the input's extent
    int32_t out_height, out_width;           // (extent + 2d − 2d − 1) / stride + 1, as the depthwise gives
    int32_t in_channels, hidden, out_channels;
    int32_t stride, dilation;                // the depthwise 3 × 3's; its padding is the dilation
    int32_t expands;                         // 1: a 1 × 1 expansion to `hidden`; 0: the depthwise reads the input
                                             // (then hidden == in_channels)
    int32_t residual;                        // 1: the input is added to the projection (stride 1, in == out)
    int32_t expand_activation, depthwise_activation;   // cfused_activation
    int32_t project_activation;              // cfused_activation (a separable convolution's); identity under a
                                             // residual, which is added after it
    const float *input;                      // [batch, height, width, in_channels]
    float *output;                           // [batch, out_height, out_width, out_channels]
    const float *expand_weights;             // cfused_pack of [in_channels][hidden] (expands only)
    const float *expand_bias;                // [padded hidden]
    const float *depthwise_weights;          // [9][padded hidden], tap ky * 3 + kx
    const float *depthwise_bias;             // [padded hidden]
    const float *project_weights;            // cfused_pack of [hidden][out_channels]; NULL: no projection, the
                                             // depthwise result is the output (out_channels == hidden)
    const float *project_bias;               // [padded out_channels]
    const cfused_stem *stem;                 // NULL: the block reads `input`
    const cfused_int8 *int8;                 // NULL: float32
} cfused_block;

/// The instruction sets this CPU runs (a bit per cfused_isa value: 1 << isa).
int32_t cfused_supported(void);

/// `channels` rounded up to whole vectors of `isa`.
int32_t cfused_padded(int32_t channels, cfused_isa isa);

/// Floats of `cfused_pack`'s output for a [k][n] matrix.
size_t cfused_packed_count(int32_t k, int32_t n, cfused_isa isa);

/// Packs a row-major [k][n] matrix (a 1 × 1 convolution's weights, input channel by output channel) into the
/// column panels the matrix kernel reads, zeros past n.
void cfused_pack(const float *matrix, int32_t k, int32_t n, cfused_isa isa, float *packed);

/// Whether this CPU runs int8 blocks (AVX-512 with VNNI).
int32_t cfused_int8_supported(void);

/// Bytes of `cfused_pack_s8`'s output for a [k][n] matrix.
size_t cfused_packed_s8_count(int32_t k, int32_t n);

/// Packs a row-major s8 [k][n] matrix into the column panels the int8 matrix kernel reads (four consecutive k of a
/// column together, as `vpdpbusd` takes them), zeros past k and n.
void cfused_pack_s8(const int8_t *matrix, int32_t k, int32_t n, int8_t *packed);

/// Floats of workspace one `cfused_run` call needs (each concurrent call its own; 0 for a depthwise convolution whose
/// side taps all read padding, computed without rows). The caller clears it once (`cfused_clear_workspace`); calls
/// for the same block keep what must stay zero so, and the next call may reuse it as it is.
size_t cfused_workspace_count(const cfused_block *block, cfused_isa isa);

/// Zeroes what of `workspace` must read zero for `block`: the padding columns of the rows the depthwise reads (a
/// stem's rows' too), a small part of it at small dilations.
void cfused_clear_workspace(const cfused_block *block, cfused_isa isa, float *workspace);

/// The largest dilation `cfused_run` takes.
#define CFUSED_MAX_DILATION 64

/// The residues output rows are taken by: d at stride 1, where rows r, r + d, r + 2d, … read input rows of
/// residue r only, two of three shared between neighbours (so three expanded rows are kept, each made once), else 1
/// (and for a depthwise convolution whose side taps all read padding).
int32_t cfused_residues(const cfused_block *block);

/// Computes the output rows y of image `image` in [row_begin, row_end) with y ≡ residue modulo
/// `cfused_residues(block)`; 0, or −1 (nothing written) for a dilation, stride or residue out of range, a stem
/// under a block that expands or adds its identity, or an int8 block with a stem, without a projection, or on other
/// kernels than AVX-512's on a CPU with VNNI. Calls on
/// disjoint rows may run concurrently; each call expands again the input rows its first and last output read.
int32_t cfused_run(const cfused_block *block, cfused_isa isa, int32_t image, int32_t residue, int32_t row_begin,
                   int32_t row_end, float *workspace);

#ifdef __cplusplus
}
#endif

#endif
