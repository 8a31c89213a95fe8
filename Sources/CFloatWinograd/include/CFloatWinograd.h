// Winograd's F(2×2, 3×3) and F(4×4, 3×3) input and output transforms for float32 convolutions, ours (no outside
// library; used by Swift's `DeepLab`, `WinogradConvolution`, only). Activations are channel-blocked by 8 (nChw8c);
// the Winograd domain is tiles, planes and channel blocks at the caller's strides, what the matrix products between
// the two transforms read and write. A convolution dilated by d is the same computation on the d × d interleaved
// sub-grids of its input: a tile reads rows y − d, y, …, y + m·d (zeros outside the image) and writes outputs y,
// y + d, …, y + (m − 1)·d.
//
// F(2×2) interpolates at 0, ±1 and infinity; F(4×4) at 0, 1, −1, ½, −2 and infinity (`WinogradConvolution` says
// why). Three instruction sets of the same source, each compiled with its own `__attribute__((target(...)))`:
// baseline x86-64, AVX2 and AVX-512 (AVX-512VL's 32 registers for the same 8-float vectors); the caller chooses one
// from oneDNN's effective ISA. They differ only where a compiler contracts a product and a sum into one FMA.
#ifndef CFLOATWINOGRAD_H
#define CFLOATWINOGRAD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    cfwino_baseline = 0,
    cfwino_avx2 = 1,
    cfwino_avx512 = 2,
} cfwino_isa;

typedef enum {
    cfwino_identity = 0,
    cfwino_relu = 1,     // max(x, 0)
    cfwino_relu6 = 2,    // min(max(x, 0), 6)
} cfwino_activation;

/// One row of tiles of one image.
typedef struct {
    int32_t tile;                       // m, outputs of a tile along each axis: 2 or 4
    int32_t channels;                   // the activation's (input or output) channels, a multiple of 8
    int32_t height, width, dilation;    // the image's extent (input's and output's), the convolution's dilation
    int32_t first_row, row_end;         // the tiles' first output row; outputs from there on before `row_end`
    int32_t first_column, column_end;   // the outputs' first column (tile column 0's) and the end of their columns
    int32_t tile_columns;               // tile column t starts at first_column + t / d · m·d + t % d
    int64_t tile_stride, plane_stride;  // floats: tile t's plane p's channel block b (of 8) starts at
    int64_t block_stride;               // t · tile_stride + p · plane_stride + b · block_stride
} cfwino_row;

/// The instruction sets this CPU runs (a bit per cfwino_isa value: 1 << isa).
int32_t cfwino_supported(void);

/// Bᵀ d B of every tile of `row` into `v` (tile 0 at `v`), from `image` ([channels / 8][height][width][8]).
void cfwino_input(cfwino_isa isa, const cfwino_row *row, const float *image, float *v);

/// Aᵀ m A plus `bias` ([channels]) through `activation` of every tile of `row` from `m` (tile 0 at `m`) into
/// `image` ([channels / 8][height][width][8]); tile slots outside the outputs are dropped.
void cfwino_output(
    cfwino_isa isa, const cfwino_row *row, const float *m, const float *bias, cfwino_activation activation,
    float *image);

#ifdef __cplusplus
}
#endif

#endif
