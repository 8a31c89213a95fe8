// A flat C API over nifti_clib (Debian's libnifti2: `nifti2_io.h`) for SliceLab's NIfTI reader. The only place
// nifti_clib is named. Headers are checked here, byte by byte, before nifti_clib sees a file.
#ifndef CNIFTI_H
#define CNIFTI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Where and how the voxel bytes of a checked file lie once it is decompressed, as nifti_clib reads its header.
typedef struct {
    int64_t offset;       // vox_offset: the first voxel byte
    int64_t count;        // voxels
    int datatype;         // NIFTI DT_* code
    int bytes_per_voxel;
    int swapped;          // 1 when the file's byte order is not this machine's
    double scl_slope, scl_inter;
} cnifti_layout;

/// What SliceLab needs from a NIfTI header, after nifti_clib has parsed it (qform and sform matrices computed
/// by the library from the quaternion and srow fields).
typedef struct {
    int version;              // 1 or 2
    int64_t dim[8];           // dim[0] = number of dimensions, dim[1...] = nx, ny, nz, nt, …
    int datatype;             // NIFTI DT_* code
    double pixdim[8];
    double scl_slope, scl_inter;
    int qform_code, sform_code;
    double qto_xyz[16];       // row-major 4 × 4, RAS+ millimetres
    double sto_xyz[16];
    int xyz_units;
    cnifti_layout layout;     // where the voxels lie once the file is decompressed
    int compressed;           // 1 for a gzip-compressed file
} cnifti_header;

/// 1 when `bytes` (the first bytes of a file, gzip-compressed or not) start a NIfTI-1 or NIfTI-2 header.
int cnifti_sniff(const uint8_t *bytes, size_t count);

/// Checks the header of `path` (sizes, datatype, offsets, the file's length) against `max_bytes` of decoded
/// Float32 values, then reads it with nifti_clib. 0 on success; -1 with a message on any error, -2 when the
/// decoded size is over `max_bytes`.
int cnifti_read_header(const char *path, int64_t max_bytes, cnifti_header *header, char *message,
                       size_t capacity);


/// Converts the voxels of a decompressed file's bytes (`bytes`, `length` of them, laid out as `layout` says) to
/// Float32 with scl_slope and scl_inter applied (slope 0: unscaled), x fastest. 0 on success, -1 with a message
/// when `bytes` end before the last voxel. `bytes` may be the tail of `values`' own storage when voxels are at
/// most 4 bytes: values are converted front to back, each read before any result reaches it.
int cnifti_convert(const uint8_t *bytes, size_t length, const cnifti_layout *layout, float *values, char *message,
                   size_t capacity);

/// Reads the voxel values of `path` as Float32 with scl_slope and scl_inter applied (slope 0: unscaled), in
/// the file's order (x fastest). `count` must equal the header's voxel count. 0 on success, -1 with a message.
int cnifti_read_values(const char *path, float *values, int64_t count, char *message, size_t capacity);

/// A checked file opened for reading its voxels a run at a time (zlib's gzread, which reads a file that is not
/// compressed as it is), so a volume never has to be in memory at once.
typedef struct cnifti_stream cnifti_stream;

/// Opens `path` for `cnifti_stream_read` with the layout its checked header gave. NULL with a message on failure.
cnifti_stream *cnifti_stream_open(const char *path, const cnifti_layout *layout, char *message, size_t capacity);

/// Reads voxels `first` ..< `first + count` (file order, x fastest) as Float32 with scl_slope and scl_inter
/// applied. Reading forward from the last run continues the stream; reading backward restarts it. 0 on success,
/// -1 with a message when the file ends early or the range lies outside the image.
int cnifti_stream_read(cnifti_stream *stream, int64_t first, int64_t count, float *values, char *message,
                       size_t capacity);

void cnifti_stream_close(cnifti_stream *stream);

/// Writes a single-file NIfTI-1 image to `path` (gzip-compressed when it ends in ".gz", as nifti_clib decides): `dimensions` nx, ny, nz
/// (and nt), `datatype` DT_UINT8, DT_UINT16 or DT_FLOAT32 with `values` of that type, x fastest; `sto_xyz` the
/// row-major RAS voxel-to-world matrix, written as the sform and (its rotation and offset) as the qform, with
/// the given codes. 0 on success, -1 with a message.
int cnifti_write(const char *path, const int64_t *dimensions, int dimension_count, int datatype,
                 const void *values, const double *sto_xyz, int qform_code, int sform_code, char *message,
                 size_t capacity);

#ifdef __cplusplus
}
#endif

#endif
