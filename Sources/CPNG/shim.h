// libpng reports errors by longjmp from its error callback, which Swift cannot catch. These shims run each
// libpng call under setjmp and turn a longjmp into a status, with the library's message copied out.
#ifndef CPNG_SHIM_H
#define CPNG_SHIM_H
#include <png.h>
#include <setjmp.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct cpng_error { jmp_buf jump; char message[256]; } cpng_error;

static inline void cpng_error_fn_(png_structp png, png_const_charp msg) {
    cpng_error *e = (cpng_error *)png_get_error_ptr(png);
    strncpy(e->message, msg ? msg : "libpng error", sizeof e->message - 1);
    e->message[sizeof e->message - 1] = 0;
    longjmp(e->jump, 1);
}
static inline void cpng_warning_fn_(png_structp png, png_const_charp msg) { (void)png; (void)msg; }

/// Decoded PNG: after `cpng_read`, `pixels` holds rows × cols × channels samples of `bit_depth` (8 or 16) bits,
/// 16-bit samples in native byte order. Gray, gray+alpha, RGB and RGBA are kept; palettes expand to RGB(A).
typedef struct cpng_image {
    unsigned rows, cols, channels, bit_depth;
    unsigned char *pixels;
} cpng_image;

/// Reads a PNG file. Returns 0 on success; otherwise fills `message`. `max_values` bounds rows × cols ×
/// channels (after palette and transparency expansion), checked from the header before any pixel is allocated:
/// over it, returns -2 with rows, cols and channels filled in. The caller frees `image->pixels` with `free`.
static inline int cpng_read(const char *path, cpng_image *image, unsigned long long max_values,
                            char *message, size_t message_size) {
    cpng_error err; err.message[0] = 0;
    image->pixels = NULL;
    FILE *fp = fopen(path, "rb");
    if (!fp) { snprintf(message, message_size, "cannot open file"); return -1; }
    unsigned char sig[8];
    if (fread(sig, 1, 8, fp) != 8 || png_sig_cmp(sig, 0, 8) != 0) {
        fclose(fp); snprintf(message, message_size, "not a PNG file (bad signature)"); return -1;
    }
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &err, cpng_error_fn_, cpng_warning_fn_);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        if (png) png_destroy_read_struct(&png, NULL, NULL);
        fclose(fp); snprintf(message, message_size, "out of memory"); return -1;
    }
    unsigned char *volatile pixels = NULL;
    png_bytep *volatile rows = NULL;
    if (setjmp(err.jump)) {
        png_destroy_read_struct(&png, &info, NULL);
        fclose(fp); free(pixels); free(rows);
        snprintf(message, message_size, "%s", err.message);
        return -1;
    }
    png_init_io(png, fp);
    png_set_sig_bytes(png, 8);
    png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
    png_read_info(png, info);
    png_uint_32 width = png_get_image_width(png, info), height = png_get_image_height(png, info);
    int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    if (depth == 16) png_set_swap(png);  /* PNG is big endian; deliver native little endian */
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    unsigned channels = png_get_channels(png, info);
    unsigned bit_depth = png_get_bit_depth(png, info);
    if ((unsigned long long)width * height > max_values / (channels ? channels : 1)) {
        png_destroy_read_struct(&png, &info, NULL); fclose(fp);
        image->rows = height; image->cols = width; image->channels = channels;
        snprintf(message, message_size, "image of %ux%u pixels x %u channels exceeds the limit of %llu values",
                 (unsigned)width, (unsigned)height, channels, max_values);
        return -2;
    }
    size_t rowbytes = png_get_rowbytes(png, info);
    pixels = (unsigned char *)malloc(rowbytes * height);
    rows = (png_bytep *)malloc(sizeof(png_bytep) * height);
    if (!pixels || !rows) longjmp(err.jump, 1);
    for (png_uint_32 y = 0; y < height; y++) rows[y] = pixels + y * rowbytes;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    fclose(fp); free(rows);
    image->rows = height; image->cols = width; image->channels = channels; image->bit_depth = bit_depth;
    image->pixels = pixels;
    return 0;
}

/// Writes rows × cols × channels samples (1: gray, 2: gray+alpha, 3: RGB, 4: RGBA) of `bit_depth` 8 or 16
/// (16-bit in native order) to an open file. Returns 0 on success; otherwise fills `message`.
static inline int cpng_write(FILE *fp, const unsigned char *pixels, unsigned rows, unsigned cols,
                             unsigned channels, unsigned bit_depth, char *message, size_t message_size) {
    cpng_error err; err.message[0] = 0;
    static const int types[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                 PNG_COLOR_TYPE_RGB_ALPHA};
    if (channels < 1 || channels > 4 || (bit_depth != 8 && bit_depth != 16)) {
        snprintf(message, message_size, "unsupported PNG layout"); return -1;
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &err, cpng_error_fn_, cpng_warning_fn_);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        if (png) png_destroy_write_struct(&png, NULL);
        snprintf(message, message_size, "out of memory"); return -1;
    }
    if (setjmp(err.jump)) {
        png_destroy_write_struct(&png, &info);
        snprintf(message, message_size, "%s", err.message);
        return -1;
    }
    png_init_io(png, fp);
    png_set_IHDR(png, info, cols, rows, (int)bit_depth, types[channels], PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    if (bit_depth == 16) png_set_swap(png);
    size_t rowbytes = (size_t)cols * channels * (bit_depth / 8);
    for (unsigned y = 0; y < rows; y++) png_write_row(png, pixels + (size_t)y * rowbytes);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return 0;
}
#endif
