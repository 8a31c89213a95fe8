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

// MARK: - Writing binary DICOM SEG (dcmseg)

/// A binary segmentation being built (DcmSegmentation); freed with `cdcmtk_seg_free`.
typedef struct cdcmtk_seg cdcmtk_seg;

/// Starts a binary SEG of `rows` × `columns` frames whose patient, study and frame of reference come from
/// `source_path` (one image of the source series), as series `series_number`. NULL on failure with the reason in
/// `message`.
cdcmtk_seg *cdcmtk_seg_create(const char *source_path, uint16_t rows, uint16_t columns, const char *series_description,
                              int series_number, char *message, size_t message_capacity);
/// The message of the last failed call on `seg`.
const char *cdcmtk_seg_error(const cdcmtk_seg *seg);
/// Adds a segment (algorithm AUTOMATIC "SliceLab") with its Segmented Property Category and Type codes and,
/// when `region` is not NULL, its Anatomic Region: each code three strings (value, scheme designator, meaning).
/// `number` receives its number.
int cdcmtk_seg_add_segment(cdcmtk_seg *seg, const char *label, const char *const *category, const char *const *type,
                           const char *const *region, uint16_t *number);
/// Shared geometry: Image Orientation (Patient) (6 values) and Pixel Measures (mm).
int cdcmtk_seg_set_geometry(cdcmtk_seg *seg, const double *orientation, double row_spacing, double column_spacing,
                            double slice_thickness);
/// Adds one frame (rows × columns bytes, non-zero = inside) of segment `segment`, lying at `position` (3 values),
/// derived from the source image `source_path` (its SOP class and instance are referenced, and its frame
/// `source_frame`, 1-based, when it is a multi-frame image; 0 for a single-frame one); `stack_position` is the
/// 1-based slice index.
int cdcmtk_seg_add_frame(cdcmtk_seg *seg, const uint8_t *pixels, uint16_t segment, const double *position,
                         const char *source_sop_class_uid, const char *source_sop_instance_uid,
                         uint32_t source_frame, const char *source_path, uint32_t stack_position);
/// Gives the SEG the Series and SOP Instance UIDs given (results derived from the same inputs then replace each
/// other where they are stored) instead of new ones.
int cdcmtk_seg_set_uids(cdcmtk_seg *seg, const char *series_instance_uid, const char *sop_instance_uid);
/// Writes the SEG (explicit VR little endian). The file is written where asked; callers write to a temporary.
int cdcmtk_seg_save(cdcmtk_seg *seg, const char *path);
void cdcmtk_seg_free(cdcmtk_seg *seg);

// MARK: - RT Structure Sets (dcmrt)

/// A structure set read through dcmrt's IOD (`DRTStructureSetIOD`), flattened; freed with `cdcmtk_rt_free`.
typedef struct cdcmtk_rt cdcmtk_rt;

/// Reads the RT Structure Set IOD of an open file. NULL on failure with the reason in `message`.
cdcmtk_rt *cdcmtk_rt_read(cdcmtk_file *file, char *message, size_t message_capacity);
void cdcmtk_rt_free(cdcmtk_rt *rt);
/// Text fields: 0 the Frame of Reference UID (the module's, else the first Referenced Frame of Reference's),
/// 1 the first referenced series' Series Instance UID, 2 the Structure Set Label, 3 the SOP Instance UID.
const char *cdcmtk_rt_text(const cdcmtk_rt *rt, int field);
/// The referenced images' SOP Instance UIDs of the Referenced Frame of Reference Sequence.
size_t cdcmtk_rt_referenced_image_count(const cdcmtk_rt *rt);
const char *cdcmtk_rt_referenced_image(const cdcmtk_rt *rt, size_t index);
/// The ROIs of the Structure Set ROI Sequence, in file order.
size_t cdcmtk_rt_roi_count(const cdcmtk_rt *rt);
/// ROI `index`: its number, name and referenced frame of reference, its display colour (−1s when absent) and
/// its RT ROI Interpreted Type ("" when absent).
int32_t cdcmtk_rt_roi_number(const cdcmtk_rt *rt, size_t index);
const char *cdcmtk_rt_roi_name(const cdcmtk_rt *rt, size_t index);
const char *cdcmtk_rt_roi_frame(const cdcmtk_rt *rt, size_t index);
void cdcmtk_rt_roi_color(const cdcmtk_rt *rt, size_t index, int32_t *rgb);
const char *cdcmtk_rt_roi_type(const cdcmtk_rt *rt, size_t index);
/// The contours of ROI `index` (from the ROI Contour Sequence item referencing its number).
size_t cdcmtk_rt_contour_count(const cdcmtk_rt *rt, size_t roi);
/// Contour `contour` of ROI `roi`: its geometric type, its first referenced image ("" when none), and its points
/// (x, y, z triples in mm, LPS) and their number.
const char *cdcmtk_rt_contour_type(const cdcmtk_rt *rt, size_t roi, size_t contour);
const char *cdcmtk_rt_contour_image(const cdcmtk_rt *rt, size_t roi, size_t contour);
size_t cdcmtk_rt_contour_point_count(const cdcmtk_rt *rt, size_t roi, size_t contour);
const double *cdcmtk_rt_contour_points(const cdcmtk_rt *rt, size_t roi, size_t contour);

/// A structure set being written through dcmrt; freed with `cdcmtk_rtw_free`.
typedef struct cdcmtk_rtw cdcmtk_rtw;

/// Starts a structure set on the series of `source_path` (one of its images): patient, study, Frame of Reference
/// (with its Position Reference Indicator) from it, a new series `series_number` described so, equipment
/// SliceLab. NULL on failure with the reason in `message`.
cdcmtk_rtw *cdcmtk_rtw_create(const char *source_path, const char *label, const char *series_description,
                              int series_number, char *message, size_t message_capacity);
const char *cdcmtk_rtw_error(const cdcmtk_rtw *rtw);
/// Lists an image of the referenced series (Contour Image Sequence of the Referenced Frame of Reference).
int cdcmtk_rtw_add_image(cdcmtk_rtw *rtw, const char *sop_class_uid, const char *sop_instance_uid);
/// Adds ROI `number` (name, display colour, RT ROI Interpreted Type; generation algorithm AUTOMATIC).
int cdcmtk_rtw_add_roi(cdcmtk_rtw *rtw, int32_t number, const char *name, const int32_t *rgb,
                       const char *interpreted_type);
/// Adds a CLOSED_PLANAR contour of `count` points (x, y, z triples, mm) to ROI `number`, on the image named.
int cdcmtk_rtw_add_contour(cdcmtk_rtw *rtw, int32_t number, const double *points, size_t count,
                           const char *sop_class_uid, const char *sop_instance_uid);
/// Gives the structure set the Series and SOP Instance UIDs given instead of new ones.
int cdcmtk_rtw_set_uids(cdcmtk_rtw *rtw, const char *series_instance_uid, const char *sop_instance_uid);
/// Writes the structure set (explicit VR little endian) where asked; callers write to a temporary.
int cdcmtk_rtw_save(cdcmtk_rtw *rtw, const char *path);
void cdcmtk_rtw_free(cdcmtk_rtw *rtw);

// MARK: - DIMSE service class user (dcmnet's DcmSCU)

/// An open association with a DICOM peer; released and freed with `cdcmtk_scu_close`.
typedef struct cdcmtk_scu cdcmtk_scu;

/// TLS for an association (dcmtls, the BCP 195 profile), PEM files. `key` and `certificate` identify this side
/// (required to accept associations; optional to request them, for peers that ask for a client certificate).
/// `trust` is a file of certificates the peer's must chain to: without it a requestor trusts the system's
/// certificates (/etc/ssl/certs) and an acceptor asks for no client certificate; with it an acceptor requires one.
typedef struct {
    const char *key;
    const char *certificate;
    const char *trust;
} cdcmtk_tls_files;

/// What an association is for: verification, storage of files, study-root C-FIND, study-root C-GET (with
/// storage contexts in the SCP role for the instances the peer sends back) or study-root C-MOVE.
typedef enum {
    CDCMTK_SCU_ECHO = 0,
    CDCMTK_SCU_STORE = 1,
    CDCMTK_SCU_FIND = 2,
    CDCMTK_SCU_GET = 3,
    CDCMTK_SCU_MOVE = 4
} cdcmtk_scu_purpose;

/// Opens an association from `calling_aet` to `called_aet` at `host`:`port`. For storage, `contexts` lists
/// "SOP class UID|transfer syntax UID" pairs of the files to send (each class also offered in explicit and implicit
/// VR little endian). `timeout_seconds` bounds the connection and every DIMSE exchange; `tls` (or NULL) secures
/// it. NULL on failure (refused, rejected, unreachable, a certificate not trusted) with the reason in `message`.
cdcmtk_scu *cdcmtk_scu_open(const char *host, uint16_t port, const char *called_aet, const char *calling_aet,
                            cdcmtk_scu_purpose purpose, const char *const *contexts, size_t context_count,
                            int timeout_seconds, const cdcmtk_tls_files *tls, char *message,
                            size_t message_capacity);
const char *cdcmtk_scu_error(const cdcmtk_scu *scu);
/// C-ECHO; `status` receives the response status.
int cdcmtk_scu_echo(cdcmtk_scu *scu, uint16_t *status);
/// C-STORE of the file at `path`; `status` receives the response status (0 success, 0xB… warning, else failure).
int cdcmtk_scu_store(cdcmtk_scu *scu, const char *path, uint16_t *status);
/// Study-root C-FIND at `level` (STUDY, SERIES, IMAGE) with `keys` ("gggg,eeee=value"; an empty value asks for
/// the attribute). The matches are written into a buffer the caller frees with `cdcmtk_free`: one record per
/// match, records separated by '\x1e', each a line "gggg,eeee=value" per returned attribute.
int cdcmtk_scu_find(cdcmtk_scu *scu, const char *level, const char *const *keys, size_t key_count, char **results,
                    size_t *length, uint16_t *status);
/// Study-root C-GET at `level` with `keys`: each instance the peer sends is written into `folder` as
/// `<n>.dcm` (Part 10, the transfer syntax it came in) and synced before its C-STORE gets a success status.
/// `received` counts them; `completed`, `failed` and `warnings` are the peer's sub-operation counts.
int cdcmtk_scu_get(cdcmtk_scu *scu, const char *level, const char *const *keys, size_t key_count,
                   const char *folder, size_t *received, uint16_t *completed, uint16_t *failed, uint16_t *warnings,
                   uint16_t *status);
/// Study-root C-MOVE at `level` with `keys` to the AE title `destination` (whose address the peer knows); the
/// instances go over associations the peer opens to it. `completed`, `failed` and `warnings` are the peer's
/// sub-operation counts, `status` its final status.
int cdcmtk_scu_move(cdcmtk_scu *scu, const char *level, const char *const *keys, size_t key_count,
                    const char *destination, uint16_t *completed, uint16_t *failed, uint16_t *warnings,
                    uint16_t *status);
void cdcmtk_scu_close(cdcmtk_scu *scu);

// MARK: - Storage service class provider (dcmnet's DcmSCPPool)

/// A Store SCP (and Verification SCP) writing every instance it accepts into a spool; one per process.
typedef struct cdcmtk_listener cdcmtk_listener;

/// Prepares a listener on `port` (every interface) as `aet`: associations from `allowed` calling AE titles (or any
/// with `allow_any`), at most `max_associations` at once, PDUs up to `max_pdu` bytes, instances up to
/// `max_instance_bytes`. Each C-STORE is received into `incoming`, checked (its Study, Series and SOP Instance UIDs
/// are UIDs, the SOP instance is the one announced, it is under the size bound), synced and renamed to
/// `received/<study>/<series>/<sop>.dcm` (the folder synced too) before its success status is sent; anything
/// else gets a failure status. `tls` (or NULL) makes every association TLS. One JSON line per event goes to
/// standard error; with `record_stored` the stored instances are kept for `cdcmtk_listener_stored` instead of
/// logged (a short-lived receiver: the list grows with every instance). NULL on failure with the reason.
cdcmtk_listener *cdcmtk_listener_create(uint16_t port, const char *aet, const char *incoming, const char *received,
                                        const char *const *allowed, size_t allowed_count, int allow_any,
                                        uint16_t max_associations, uint32_t max_pdu, uint64_t max_instance_bytes,
                                        const cdcmtk_tls_files *tls, int record_stored, char *message,
                                        size_t message_capacity);
/// Accepts associations until `cdcmtk_listener_stop`; returns after the current associations end.
int cdcmtk_listener_run(cdcmtk_listener *listener);
/// Asks a running listener to stop (from any thread).
void cdcmtk_listener_stop(cdcmtk_listener *listener);
const char *cdcmtk_listener_error(const cdcmtk_listener *listener);
/// With `record_stored`, the paths of the instances stored so far, one per line, in a buffer the caller frees with
/// `cdcmtk_free`.
char *cdcmtk_listener_stored(cdcmtk_listener *listener);
void cdcmtk_listener_free(cdcmtk_listener *listener);
void cdcmtk_free(void *pointer);

#ifdef __cplusplus
}
#endif
#endif
