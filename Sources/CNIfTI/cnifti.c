#include "cnifti.h"

#include <nifti2_io.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static int fail(char *message, size_t capacity, int status, const char *text) {
    snprintf(message, capacity, "%s", text);
    return status;
}

static void swap(void *value, size_t size) {
    unsigned char *bytes = value;
    for (size_t i = 0; i < size / 2; i++) {
        unsigned char t = bytes[i];
        bytes[i] = bytes[size - 1 - i];
        bytes[size - 1 - i] = t;
    }
}

/// Reads a field of `size` bytes at `offset` of a raw header, swapped when the file's byte order differs.
static void field(const unsigned char *raw, size_t offset, void *out, size_t size, int swapped) {
    memcpy(out, raw + offset, size);
    if (swapped) swap(out, size);
}

/// The header's version (1 or 2) and byte order from its first four bytes (sizeof_hdr 348 or 540); 0 if neither.
static int version_of(const unsigned char *raw, int *swapped) {
    int32_t size;
    memcpy(&size, raw, 4);
    *swapped = 0;
    if (size == 348 || size == 540) return size == 348 ? 1 : 2;
    swap(&size, 4);
    *swapped = 1;
    if (size == 348 || size == 540) return size == 348 ? 1 : 2;
    return 0;
}

static int magic_ok(const unsigned char *raw, int version) {
    return version == 1 ? (memcmp(raw + 344, "n+1\0", 4) == 0)
                        : (memcmp(raw + 4, "n+2\0\r\n\032\n", 8) == 0);
}

int cnifti_sniff(const uint8_t *bytes, size_t count) {
    unsigned char raw[540];
    size_t have = 0;
    if (count >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) {
        z_stream stream;
        memset(&stream, 0, sizeof stream);
        if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) return 0;
        stream.next_in = (Bytef *)bytes;
        stream.avail_in = (uInt)count;
        stream.next_out = raw;
        stream.avail_out = sizeof raw;
        int status = inflate(&stream, Z_SYNC_FLUSH);
        have = sizeof raw - stream.avail_out;
        inflateEnd(&stream);
        if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR) return 0;
    } else {
        have = count < sizeof raw ? count : sizeof raw;
        memcpy(raw, bytes, have);
    }
    if (have < 348) return 0;
    int swapped, version = version_of(raw, &swapped);
    if (version == 0 || (version == 2 && have < 540)) return 0;
    return magic_ok(raw, version);
}

/// nifti_clib finds a file by its name (".nii", ".nii.gz") and decompresses by name: a file named otherwise,
/// or named against its content, is read through a symbolic link named for its content in a fresh temporary
/// folder. Returns the path to give nifti_clib (`path` itself or the link); `release_alias` removes the link.
static const char *alias_for(const char *path, char *buffer, size_t capacity) {
    unsigned char magic[2] = {0, 0};
    FILE *file = fopen(path, "rb");
    if (file) { fread(magic, 1, 2, file); fclose(file); }
    int compressed = magic[0] == 0x1f && magic[1] == 0x8b;
    size_t length = strlen(path);
    const char *suffix = compressed ? ".nii.gz" : ".nii";
    size_t suffix_length = strlen(suffix);
    if (length > suffix_length && strcmp(path + length - suffix_length, suffix) == 0) return path;
    char folder[] = "/tmp/slicelab-nifti-XXXXXX";
    if (!mkdtemp(folder)) return NULL;
    char absolute[4096];
    if (!realpath(path, absolute)) { rmdir(folder); return NULL; }
    snprintf(buffer, capacity, "%s/image%s", folder, suffix);
    if (symlink(absolute, buffer) != 0) { rmdir(folder); return NULL; }
    return buffer;
}

static void release_alias(const char *path, const char *alias) {
    if (alias == path || alias == NULL) return;
    unlink(alias);
    char folder[4096];
    snprintf(folder, sizeof folder, "%s", alias);
    char *slash = strrchr(folder, '/');
    if (slash) { *slash = 0; rmdir(folder); }
}

static nifti_image *read_image(const char *path, int read_data) {
    char buffer[4096];
    const char *alias = alias_for(path, buffer, sizeof buffer);
    if (!alias) return NULL;
    nifti_set_debug_level(0);
    nifti_image *image = nifti_image_read(alias, read_data);
    release_alias(path, alias);
    return image;
}

/// The datatypes SliceLab reads, with their bytes per voxel; 0 for any other.
static int bytes_per_voxel(int datatype) {
    switch (datatype) {
    case DT_INT8: case DT_UINT8: return 1;
    case DT_INT16: case DT_UINT16: return 2;
    case DT_INT32: case DT_UINT32: case DT_FLOAT32: return 4;
    case DT_INT64: case DT_UINT64: case DT_FLOAT64: return 8;
    default: return 0;
    }
}

int cnifti_read_header(const char *path, int64_t max_bytes, cnifti_header *header, char *message,
                       size_t capacity) {
    unsigned char raw[540];
    memset(raw, 0, sizeof raw);
    gzFile file = gzopen(path, "rb");
    if (!file) return fail(message, capacity, -1, "cannot open the file");
    int got = gzread(file, raw, sizeof raw);
    int gz_error;
    const char *gz_message = gzerror(file, &gz_error);
    int direct = gzdirect(file);
    gzclose(file);
    if (got < 0 || (gz_error != Z_OK && gz_error != Z_BUF_ERROR)) {
        return fail(message, capacity, -1, gz_error == Z_DATA_ERROR ? "corrupt gzip stream" : gz_message);
    }
    if (got < 348) return fail(message, capacity, -1, "shorter than a NIfTI header (348 bytes)");
    int swapped, version = version_of(raw, &swapped);
    if (version == 0) {
        return fail(message, capacity, -1, "sizeof_hdr is neither 348 (NIfTI-1) nor 540 (NIfTI-2)");
    }
    if (version == 2 && got < 540) return fail(message, capacity, -1, "shorter than a NIfTI-2 header (540 bytes)");
    if (!magic_ok(raw, version)) {
        return fail(message, capacity, -1, version == 1 ? "magic is not \"n+1\" (a .hdr/.img pair is not read)"
                                                        : "magic is not \"n+2\" (a .hdr/.img pair is not read)");
    }
    int64_t dim[8];
    int16_t datatype;
    int64_t offset;
    if (version == 1) {
        int16_t dim16[8];
        for (int i = 0; i < 8; i++) { field(raw, 40 + 2 * i, &dim16[i], 2, swapped); dim[i] = dim16[i]; }
        field(raw, 70, &datatype, 2, swapped);
        float offset32;
        field(raw, 108, &offset32, 4, swapped);
        if (!(offset32 >= 352 && offset32 < 9.2e18f)) return fail(message, capacity, -1, "vox_offset is below 352");
        offset = (int64_t)offset32;
    } else {
        for (int i = 0; i < 8; i++) field(raw, 16 + 8 * i, &dim[i], 8, swapped);
        field(raw, 12, &datatype, 2, swapped);
        field(raw, 168, &offset, 8, swapped);
        if (offset < 544) return fail(message, capacity, -1, "vox_offset is below 544");
    }
    if (dim[0] < 1 || dim[0] > 7) {
        snprintf(message, capacity, "dim[0] is %lld, not 1 to 7", (long long)dim[0]);
        return -1;
    }
    int64_t voxels = 1;
    double claimed = 1;
    int overflow = 0;
    for (int i = 1; i <= dim[0]; i++) {
        if (dim[i] < 1) {
            snprintf(message, capacity, "dim[%d] is %lld, not positive", i, (long long)dim[i]);
            return -1;
        }
        claimed *= (double)dim[i];
        if (__builtin_mul_overflow(voxels, dim[i], &voxels)) overflow = 1;
    }
    int size = bytes_per_voxel(datatype);
    if (size == 0) {
        snprintf(message, capacity, "datatype %d is not one SliceLab reads (integers of 8 to 64 bits, float32, "
                 "float64)", datatype);
        return -1;
    }
    if (overflow || claimed * 4 > (double)max_bytes) {
        snprintf(message, capacity, "%.0f voxels would take %.0f bytes as Float32, over the read limit of %lld "
                 "bytes", claimed, claimed * 4, (long long)max_bytes);
        return -2;
    }
    // Uncompressed, the file must hold what the header claims; compressed, deflate cannot exceed 1032:1, so a
    // small file claiming a large volume is refused before anything is allocated or inflated.
    struct stat status;
    if (stat(path, &status) != 0) return fail(message, capacity, -1, "cannot stat the file");
    double needed = (double)offset + claimed * size, ratio = direct ? 1 : 1032;
    if (needed > ratio * (double)status.st_size + (direct ? 0 : 1024)) {
        snprintf(message, capacity, "the file holds %lld bytes%s but its header claims %.0f (vox_offset %lld "
                 "+ %.0f voxels of %d bytes)", (long long)status.st_size,
                 direct ? "" : " of gzip (at most 1032 times that inflated)", needed, (long long)offset, claimed,
                 size);
        return -1;
    }
    nifti_image *image = read_image(path, 0);
    if (!image) return fail(message, capacity, -1, "nifti_clib cannot read the header");
    memset(header, 0, sizeof *header);
    header->version = version;
    for (int i = 0; i < 8; i++) { header->dim[i] = image->dim[i]; header->pixdim[i] = image->pixdim[i]; }
    header->datatype = image->datatype;
    header->scl_slope = image->scl_slope;
    header->scl_inter = image->scl_inter;
    header->qform_code = image->qform_code;
    header->sform_code = image->sform_code;
    header->xyz_units = image->xyz_units;
    header->layout = (cnifti_layout){image->iname_offset, image->nvox, image->datatype, size,
                                     image->byteorder != nifti_short_order(), image->scl_slope, image->scl_inter};
    header->compressed = !direct;
    for (int r = 0; r < 4; r++) {
        for (int c = 0; c < 4; c++) {
            header->qto_xyz[r * 4 + c] = image->qto_xyz.m[r][c];
            header->sto_xyz[r * 4 + c] = image->sto_xyz.m[r][c];
        }
    }
    nifti_image_free(image);
    return 0;
}

/// Loads a value of `size` bytes, swapping its bytes when asked (memcpy: voxels need not be aligned).
static inline void load(const uint8_t *at, void *out, size_t size, int swapped) {
    memcpy(out, at, size);
    if (swapped) swap(out, size);
}

int cnifti_convert(const uint8_t *bytes, size_t length, const cnifti_layout *layout, float *values, char *message,
                   size_t capacity) {
    int size = bytes_per_voxel(layout->datatype);
    if (size == 0) return fail(message, capacity, -1, "unsupported datatype");
    int64_t count = layout->count;
    if (layout->offset < 0 || (double)layout->offset + (double)count * size > (double)length) {
        snprintf(message, capacity, "the data end after %zu bytes, before the last voxel at byte %.0f (truncated)",
                 length, (double)layout->offset + (double)count * size);
        return -1;
    }
    const uint8_t *in = bytes + layout->offset;
    double slope = layout->scl_slope, intercept = layout->scl_inter;
    int scaled = slope != 0 && (slope != 1 || intercept != 0);
    if (slope == 0) { slope = 1; intercept = 0; }
    int swapped = layout->swapped && size > 1;
    // Aligned voxels in this machine's byte order go through a plain loop the compiler vectorises.
#define WIDEN(TYPE) { \
        if (!swapped && (uintptr_t)in % sizeof(TYPE) == 0) { \
            const TYPE *typed = (const TYPE *)in; \
            if (scaled) { for (int64_t i = 0; i < count; i++) values[i] = (float)(typed[i] * slope + intercept); } \
            else { for (int64_t i = 0; i < count; i++) values[i] = (float)typed[i]; } \
        } else { \
            for (int64_t i = 0; i < count; i++) { \
                TYPE value; \
                load(in + i * (int64_t)sizeof(TYPE), &value, sizeof(TYPE), swapped); \
                values[i] = scaled ? (float)(value * slope + intercept) : (float)value; \
            } \
        } }
    switch (layout->datatype) {
    case DT_INT8: WIDEN(int8_t) break;
    case DT_UINT8: WIDEN(uint8_t) break;
    case DT_INT16: WIDEN(int16_t) break;
    case DT_UINT16: WIDEN(uint16_t) break;
    case DT_INT32: WIDEN(int32_t) break;
    case DT_UINT32: WIDEN(uint32_t) break;
    case DT_INT64: WIDEN(int64_t) break;
    case DT_UINT64: WIDEN(uint64_t) break;
    case DT_FLOAT32: WIDEN(float) break;
    case DT_FLOAT64: WIDEN(double) break;
    }
#undef WIDEN
    return 0;
}

int cnifti_read_values(const char *path, float *values, int64_t count, char *message, size_t capacity) {
    nifti_image *image = read_image(path, 1);
    if (!image || !image->data) {
        if (image) nifti_image_free(image);
        return fail(message, capacity, -1, "nifti_clib cannot read the voxels (truncated or corrupt file)");
    }
    if (image->nvox != count) {
        nifti_image_free(image);
        return fail(message, capacity, -1, "the voxel count changed between reading the header and the voxels");
    }
    // nifti_clib has already put the voxels in this machine's byte order.
    cnifti_layout layout = {0, count, image->datatype, bytes_per_voxel(image->datatype), 0, image->scl_slope,
                            image->scl_inter};
    int status = cnifti_convert(image->data, (size_t)(image->nvox * image->nbyper), &layout, values, message,
                                capacity);
    nifti_image_free(image);
    return status;
}

struct cnifti_stream {
    gzFile file;
    cnifti_layout layout;
    uint8_t *buffer;
    size_t buffer_size;
};

cnifti_stream *cnifti_stream_open(const char *path, const cnifti_layout *layout, char *message, size_t capacity) {
    gzFile file = gzopen(path, "rb");
    if (!file) {
        fail(message, capacity, -1, "cannot open the file");
        return NULL;
    }
    gzbuffer(file, 1 << 18);
    cnifti_stream *stream = calloc(1, sizeof(cnifti_stream));
    if (!stream) {
        gzclose(file);
        fail(message, capacity, -1, "out of memory");
        return NULL;
    }
    stream->file = file;
    stream->layout = *layout;
    return stream;
}

int cnifti_stream_read(cnifti_stream *stream, int64_t first, int64_t count, float *values, char *message,
                       size_t capacity) {
    const cnifti_layout *layout = &stream->layout;
    if (first < 0 || count < 0 || first > layout->count - count) {
        return fail(message, capacity, -1, "voxels outside the image were asked for");
    }
    size_t bytes = (size_t)count * (size_t)layout->bytes_per_voxel;
    if (bytes > stream->buffer_size) {
        uint8_t *grown = realloc(stream->buffer, bytes);
        if (!grown) return fail(message, capacity, -1, "out of memory");
        stream->buffer = grown;
        stream->buffer_size = bytes;
    }
    // zlib continues a forward seek by inflating up to the offset and restarts the stream for a backward one.
    z_off_t offset = (z_off_t)(layout->offset + first * layout->bytes_per_voxel);
    if (gztell(stream->file) != offset && gzseek(stream->file, offset, SEEK_SET) != offset) {
        return fail(message, capacity, -1, "the file ends before its voxels (truncated or corrupt)");
    }
    size_t done = 0;
    while (done < bytes) {
        unsigned chunk = bytes - done > (1u << 30) ? (1u << 30) : (unsigned)(bytes - done);
        int got = gzread(stream->file, stream->buffer + done, chunk);
        if (got <= 0) return fail(message, capacity, -1, "the file ends before its last voxel (truncated or corrupt)");
        done += (size_t)got;
    }
    cnifti_layout run = *layout;
    run.offset = 0;
    run.count = count;
    return cnifti_convert(stream->buffer, bytes, &run, values, message, capacity);
}

void cnifti_stream_close(cnifti_stream *stream) {
    if (!stream) return;
    gzclose(stream->file);
    free(stream->buffer);
    free(stream);
}

int cnifti_write(const char *path, const int64_t *dimensions, int dimension_count, int datatype,
                 const void *values, const double *sto_xyz, int qform_code, int sform_code, char *message,
                 size_t capacity) {
    if (dimension_count < 1 || dimension_count > 4) return fail(message, capacity, -1, "1 to 4 dimensions only");
    if (datatype != DT_UINT8 && datatype != DT_UINT16 && datatype != DT_FLOAT32) {
        return fail(message, capacity, -1, "only uint8, uint16 and float32 are written");
    }
    int64_t dims[8] = {dimension_count, 1, 1, 1, 1, 1, 1, 1};
    for (int i = 0; i < dimension_count; i++) dims[i + 1] = dimensions[i];
    nifti_set_debug_level(0);
    nifti_image *image = nifti_make_new_nim(dims, datatype, 0);
    if (!image) return fail(message, capacity, -1, "nifti_clib cannot make the image");
    nifti_dmat44 matrix;
    for (int r = 0; r < 4; r++) for (int c = 0; c < 4; c++) matrix.m[r][c] = sto_xyz[r * 4 + c];
    image->sto_xyz = matrix;
    image->sto_ijk = nifti_dmat44_inverse(matrix);
    image->sform_code = sform_code;
    image->qform_code = qform_code;
    double dx, dy, dz;
    nifti_dmat44_to_quatern(matrix, &image->quatern_b, &image->quatern_c, &image->quatern_d, &image->qoffset_x,
                            &image->qoffset_y, &image->qoffset_z, &dx, &dy, &dz, &image->qfac);
    image->qto_xyz = nifti_quatern_to_dmat44(image->quatern_b, image->quatern_c, image->quatern_d,
                                             image->qoffset_x, image->qoffset_y, image->qoffset_z, dx, dy, dz,
                                             image->qfac);
    image->qto_ijk = nifti_dmat44_inverse(image->qto_xyz);
    image->dx = image->pixdim[1] = dx;
    image->dy = image->pixdim[2] = dy;
    image->dz = image->pixdim[3] = dz;
    image->xyz_units = NIFTI_UNITS_MM;
    image->nifti_type = NIFTI_FTYPE_NIFTI1_1;
    free(image->fname);
    free(image->iname);
    image->fname = strdup(path);
    image->iname = strdup(path);
    image->iname_offset = 352;
    image->data = (void *)values;
    nifti_image_write(image);
    image->data = NULL;  // the caller's buffer
    nifti_image_free(image);
    struct stat status;
    if (stat(path, &status) != 0 || status.st_size == 0) {
        return fail(message, capacity, -1, "nifti_clib did not write the file");
    }
    return 0;
}
