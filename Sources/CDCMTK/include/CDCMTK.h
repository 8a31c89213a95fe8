// A flat C API over DCMTK: opaque handles, status codes with messages, caller-owned buffers.
// The only header of the package that DCMTK sits behind; no DCMTK type crosses it.
#ifndef CDCMTK_H
#define CDCMTK_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/// Status codes returned by every call that can fail; the message is in `cdcmtk_last_error`.
enum {
    CDCMTK_OK = 0,
    CDCMTK_ERROR = 1,
    CDCMTK_NOT_FOUND = 2,
    CDCMTK_BUFFER_TOO_SMALL = 3,
};

/// An open DICOM file (DcmFileFormat). Owns everything reached through it.
typedef struct cdcmtk_file cdcmtk_file;
/// A dataset or a sequence item inside an open file; borrowed, valid while the file is open.
typedef struct cdcmtk_item cdcmtk_item;

/// Registers DCMTK's JPEG, JPEG-LS and RLE decoders once; safe to call from any thread, any number of times.
void cdcmtk_register_codecs(void);

/// The DCMTK version string, e.g. "3.6.7".
const char *cdcmtk_version(void);

/// Opens a DICOM file (with or without meta header). Element values longer than `max_read_length` bytes stay
/// on disk until read. Returns NULL on failure with the reason in `message`.
cdcmtk_file *cdcmtk_open(const char *path, uint32_t max_read_length, char *message, size_t message_capacity);
/// Closes a file opened by `cdcmtk_open`; NULL is ignored.
void cdcmtk_close(cdcmtk_file *file);
/// The message of the last failed call on `file`.
const char *cdcmtk_last_error(const cdcmtk_file *file);

/// The main dataset.
cdcmtk_item *cdcmtk_dataset(cdcmtk_file *file);
/// The file meta information (group 0002); may be empty.
cdcmtk_item *cdcmtk_meta(cdcmtk_file *file);
/// The transfer syntax UID the dataset was read in (e.g. "1.2.840.10008.1.2.1"), into `buffer`.
int cdcmtk_transfer_syntax(cdcmtk_file *file, char *buffer, size_t capacity);

/// Whether the element (group, element) is present in `item` (not searching nested items).
int cdcmtk_has(cdcmtk_item *item, uint16_t group, uint16_t element);
/// Value multiplicity of an element, or the number of items of a sequence. NOT_FOUND when absent.
int cdcmtk_value_count(cdcmtk_file *file, cdcmtk_item *item, uint16_t group, uint16_t element,
                       unsigned long *count);
/// The value at `index` as a string (numbers formatted by DCMTK), or every value joined by '\' when `index`
/// is negative. `needed` receives the length plus the terminating zero; BUFFER_TOO_SMALL when it exceeds
/// `capacity`.
int cdcmtk_get_string(cdcmtk_file *file, cdcmtk_item *item, uint16_t group, uint16_t element, long index,
                      char *buffer, size_t capacity, size_t *needed);
/// 16-bit words of an element (US, SS, OW, or LUT data), at most `capacity`; `count` gets the total.
int cdcmtk_get_uint16s(cdcmtk_file *file, cdcmtk_item *item, uint16_t group, uint16_t element,
                       uint16_t *buffer, size_t capacity, size_t *count);
/// The item at `index` of a sequence element. NOT_FOUND when the sequence or the item is absent.
int cdcmtk_sequence_item(cdcmtk_file *file, cdcmtk_item *item, uint16_t group, uint16_t element,
                         unsigned long index, cdcmtk_item **result);
/// A text dump of the whole file (DCMTK's `print`), into `buffer`; `needed` as for `cdcmtk_get_string`.
int cdcmtk_dump(cdcmtk_file *file, char *buffer, size_t capacity, size_t *needed);

/// Describes the Pixel Data element: `encapsulated` 1 for a compressed (fragmented) value, `length` the
/// native value length in bytes, `fragments` the number of fragments (without the offset table).
/// NOT_FOUND when the dataset has no Pixel Data.
int cdcmtk_pixel_info(cdcmtk_file *file, int *encapsulated, uint64_t *length, unsigned long *fragments);
/// Copies `length` bytes of native Pixel Data from `offset`, in little-endian order of 16-bit words for OW.
int cdcmtk_read_pixels(cdcmtk_file *file, uint64_t offset, uint32_t length, void *buffer);
/// The size of fragment `index` (0 is the first fragment after the basic offset table).
int cdcmtk_fragment_length(cdcmtk_file *file, unsigned long index, uint32_t *length);
/// Copies fragment `index` into `buffer` of at least its length.
int cdcmtk_fragment(cdcmtk_file *file, unsigned long index, void *buffer, uint32_t capacity);
/// The basic offset table's entries (byte offsets of each frame's first fragment), at most `capacity`.
int cdcmtk_offset_table(cdcmtk_file *file, uint32_t *offsets, size_t capacity, size_t *count);
/// Decodes frame `frame` of an RLE, JPEG or JPEG-LS dataset with DCMTK's codecs into `buffer` (native
/// little-endian samples as the dataset declares them), and writes the decoded photometric interpretation.
int cdcmtk_decode_frame(cdcmtk_file *file, uint32_t frame, void *buffer, uint32_t capacity,
                        char *color_model, size_t color_model_capacity);

#ifdef __cplusplus
}
#endif
#endif
