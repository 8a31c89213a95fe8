// The C++ side of CDCMTK.h: the only file of the package that includes DCMTK headers.
#include "CDCMTK.h"
#include <dcmtk/config/osconfig.h>
#include <dcmtk/dcmdata/dctk.h>
#include <dcmtk/dcmdata/dcpxitem.h>
#include <dcmtk/dcmdata/dcfcache.h>
#include <dcmtk/dcmdata/dcistrmf.h>
#include <dcmtk/dcmdata/dcrledrg.h>
#include <dcmtk/dcmjpeg/djdecode.h>
#include <dcmtk/dcmjpls/djdecode.h>
#include <dcmtk/dcmfg/fgderimg.h>
#include <dcmtk/dcmfg/fgfracon.h>
#include <dcmtk/dcmfg/fgpixmsr.h>
#include <dcmtk/dcmfg/fgplanor.h>
#include <dcmtk/dcmfg/fgplanpo.h>
#include <dcmtk/dcmiod/iodreferences.h>
#include <dcmtk/dcmseg/segdoc.h>
#include <dcmtk/dcmseg/segment.h>
#include <dcmtk/dcmrt/drtstrct.h>
#include <dcmtk/dcmnet/scu.h>
#include <dcmtk/dcmnet/scppool.h>
#include <dcmtk/dcmnet/scpthrd.h>
#include <dcmtk/dcmtls/tlslayer.h>
#include <sys/stat.h>
#include <atomic>
#include <ctime>
#include <dcmtk/dcmnet/diutil.h>
#include <fcntl.h>
#include <unistd.h>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <vector>
#include <algorithm>

struct cdcmtk_file {
    DcmFileFormat format;
    std::string error;
};

namespace {

DcmItem *asItem(cdcmtk_item *item) { return reinterpret_cast<DcmItem *>(item); }
cdcmtk_item *asHandle(DcmItem *item) { return reinterpret_cast<cdcmtk_item *>(item); }

int fail(cdcmtk_file *file, const std::string &message, int status = CDCMTK_ERROR) {
    if (file) file->error = message;
    return status;
}

int copyString(const std::string &value, char *buffer, size_t capacity, size_t *needed) {
    if (needed) *needed = value.size() + 1;
    if (!buffer || capacity < value.size() + 1) return CDCMTK_BUFFER_TOO_SMALL;
    std::memcpy(buffer, value.c_str(), value.size() + 1);
    return CDCMTK_OK;
}

/// Copies `text` into a caller's message buffer, truncated and zero-terminated.
void copyMessage(const std::string &text, char *message, size_t capacity) {
    if (message && capacity > 0) {
        std::strncpy(message, text.c_str(), capacity - 1);
        message[capacity - 1] = 0;
    }
}

std::string tagName(uint16_t group, uint16_t element) {
    char text[16];
    std::snprintf(text, sizeof text, "(%04x,%04x)", group, element);
    return text;
}

/// Finds an element directly in `item`; NOT_FOUND (with message) when absent.
int findElement(cdcmtk_file *file, cdcmtk_item *item, uint16_t group, uint16_t element, DcmElement *&result) {
    result = nullptr;
    if (!item) return fail(file, "no dataset", CDCMTK_ERROR);
    OFCondition status = asItem(item)->findAndGetElement(DcmTagKey(group, element), result, OFFalse);
    if (status.bad() || !result) return fail(file, tagName(group, element) + " is absent", CDCMTK_NOT_FOUND);
    return CDCMTK_OK;
}

/// The Pixel Data element of the dataset, or nullptr (with the file's message set).
DcmPixelData *pixelData(cdcmtk_file *file, int *status) {
    DcmElement *element = nullptr;
    *status = findElement(file, cdcmtk_dataset(file), 0x7fe0, 0x0010, element);
    if (*status != CDCMTK_OK) return nullptr;
    if (element->ident() != EVR_PixelData) {
        *status = fail(file, "Pixel Data has an unexpected representation");
        return nullptr;
    }
    return OFstatic_cast(DcmPixelData *, element);
}

/// The fragment sequence of encapsulated Pixel Data, or nullptr.
DcmPixelSequence *fragments(cdcmtk_file *file, int *status) {
    DcmPixelData *pixels = pixelData(file, status);
    if (!pixels) return nullptr;
    E_TransferSyntax original = EXS_Unknown;
    const DcmRepresentationParameter *parameter = nullptr;
    pixels->getOriginalRepresentationKey(original, parameter);
    DcmPixelSequence *sequence = nullptr;
    OFCondition condition = pixels->getEncapsulatedRepresentation(original, parameter, sequence);
    if (condition.bad() || !sequence) {
        *status = fail(file, std::string("Pixel Data is not encapsulated: ") + condition.text());
        return nullptr;
    }
    *status = CDCMTK_OK;
    return sequence;
}

}  // namespace

extern "C" void cdcmtk_register_codecs(void) {
    static std::once_flag once;
    std::call_once(once, [] {
        // No colour conversion inside the JPEG decoder: YBR_FULL(_422) is converted to RGB by SliceLab with the
        // same coefficients and rounding as pydicom.
        DJDecoderRegistration::registerCodecs(EDC_never);
        DJLSDecoderRegistration::registerCodecs();
        DcmRLEDecoderRegistration::registerCodecs();
        // Read UN elements of known tags with their dictionary VR (as pydicom does), and trust the dataset's
        // own encoding over a meta header that declares another one.
        dcmEnableUnknownVRConversion.set(OFTrue);
        dcmAutoDetectDatasetXfer.set(OFTrue);
        // Problems reach the caller as status messages; DCMTK's own log would only add noise on stderr.
        OFLog::configure(OFLogger::FATAL_LOG_LEVEL);
    });
}

extern "C" const char *cdcmtk_version(void) { return OFFIS_DCMTK_VERSION_STRING; }

namespace {

/// Reads the dataset of a file whose meta header declares an encapsulated (JPEG, RLE, …) transfer syntax but whose
/// dataset is written in Implicit VR Little Endian (seen in pydicom's SC_rgb_jpeg.dcm; pydicom reads such files
/// with a warning): the dataset is read as implicit VR from just after the meta header, and the encapsulated Pixel
/// Data is re-keyed under the declared syntax so DCMTK's codecs decode it. False when the file is not such a case.
bool loadImplicitDatasetWithEncapsulatedPixels(cdcmtk_file *file, const char *path, uint32_t max_read_length) {
    DcmFileFormat &format = file->format;
    if (format.loadFile(path, EXS_Unknown, EGL_noChange, max_read_length, ERM_metaOnly).bad()) return false;
    OFString uid;
    Uint32 groupLength = 0;
    DcmMetaInfo *meta = format.getMetaInfo();
    if (!meta || meta->findAndGetOFString(DCM_TransferSyntaxUID, uid).bad() ||
        meta->findAndGetUint32(DCM_FileMetaInformationGroupLength, groupLength).bad()) {
        return false;
    }
    DcmXfer declared(uid.c_str());
    if (!declared.isEncapsulated()) return false;
    // Preamble and "DICM" (132 bytes), the group length element (12 bytes), then the rest of group 0002.
    DcmInputFileStream stream(path, 132 + 12 + offile_off_t(groupLength));
    if (stream.status().bad()) return false;
    DcmDataset *dataset = format.getDataset();
    dataset->clear();
    dataset->transferInit();
    OFCondition status = dataset->read(stream, EXS_LittleEndianImplicit, EGL_noChange, max_read_length);
    dataset->transferEnd();
    if (status.bad()) return false;
    DcmElement *element = nullptr;
    if (dataset->findAndGetElement(DCM_PixelData, element, OFFalse).bad() || !element ||
        element->ident() != EVR_PixelData) {
        return false;
    }
    DcmPixelData *pixels = OFstatic_cast(DcmPixelData *, element);
    E_TransferSyntax original = EXS_Unknown;
    const DcmRepresentationParameter *parameter = nullptr;
    pixels->getOriginalRepresentationKey(original, parameter);
    DcmPixelSequence *sequence = nullptr;
    if (pixels->getEncapsulatedRepresentation(original, parameter, sequence).bad() || !sequence) return false;
    DcmPixelSequence *copy = new (std::nothrow) DcmPixelSequence(*sequence);
    if (!copy) return false;
    pixels->putOriginalRepresentation(declared.getXfer(), nullptr, copy);
    return true;
}

uint32_t littleEndian(const unsigned char *b, int n) {
    uint32_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | b[i];
    return v;
}

/// Whether an explicit-VR element of this VR has a 2-byte length. Every other VR, a non-standard one
/// included, has 2 reserved bytes and a 4-byte length (DCMTK reads an unknown VR so too: "assuming 4 byte
/// length field").
bool shortLengthForm(const unsigned char *vr) {
    static const char *const shortForms[] = {"AE", "AS", "AT", "CS", "DA", "DS", "DT", "FD", "FL", "IS", "LO",
                                             "LT", "PN", "SH", "SL", "SS", "ST", "TM", "UI", "UL", "US"};
    return std::any_of(std::begin(shortForms), std::end(shortForms),
                       [&](const char *v) { return v[0] == char(vr[0]) && v[1] == char(vr[1]); });
}

/// The deflated data set from byte `start` walked element by element: why it is impossible, or "".
std::string impossibleDeflatedLengthFrom(const char *path, offile_off_t start) {
    DcmInputFileStream stream(path, start);
    if (stream.status().bad() || stream.installCompressionFilter(ESC_zlib).bad()) return "";
    bool encapsulated = false;  // inside undefined-length pixel data: items hold fragments, not elements
    unsigned char header[8];
    while (stream.read(header, 8) == 8) {
        uint16_t group = uint16_t(littleEndian(header, 2)), element = uint16_t(littleEndian(header + 2, 2));
        uint32_t length;
        bool descend = false;
        if (group == 0xFFFE) {  // item or delimiter: tag and a 4-byte length, no VR
            length = littleEndian(header + 4, 4);
            if (element == 0xE0DD) encapsulated = false;
            if (element != 0xE000 || !encapsulated) continue;
        } else {
            bool sequence = header[4] == 'S' && header[5] == 'Q';
            if (!shortLengthForm(header + 4)) {
                unsigned char extended[4];
                if (stream.read(extended, 4) != 4) return "";
                length = littleEndian(extended, 4);
            } else {
                length = littleEndian(header + 6, 2);
            }
            descend = sequence || length == 0xFFFFFFFF;
            if (length == 0xFFFFFFFF && !sequence) encapsulated = true;
        }
        if (descend) continue;
        offile_off_t skipped = stream.skip(offile_off_t(length));
        if (skipped < offile_off_t(length)) {
            return "element " + tagName(group, element) + " claims " + std::to_string(length) +
                   " bytes, but the deflated data set ends " + std::to_string(skipped) + " bytes into it";
        }
    }
    return "";
}

/// A deflated data set is read through an inflating stream, which DCMTK cannot skip ahead in, so it allocates
/// the value field an element claims before it finds the stream short (3.5 GB reserved for a 4.6 KB fuzzed
/// file). This walks the element headers through DCMTK's own inflating stream first and returns why the file
/// is impossible (an element claiming more bytes than the data set holds), or an empty string when it is not a
/// deflated file or its lengths fit. Explicit VR little endian, as deflated syntaxes are, read as DCMTK reads
/// it; a walk that mirrors DCMTK's parser, not a proof that DCMTK will never meet a longer claim.
/// The walk starts where DCMTK's own reading of the meta group ends, not where its group length points: a
/// fuzzed meta element with a garbled VR made the two differ, and a walk from the group length missed the claim
/// DCMTK then reserved 3.5 GB for (`deflated-meta-garbled-vr.dcm`). One reading of the meta group gives both the
/// transfer syntax and that position.
std::string impossibleDeflatedLength(const char *path) {
    // The meta group read as DCMTK reads it, so that the walk starts where DCMTK starts the data set.
    DcmInputFileStream stream(path);
    if (stream.status().bad()) return "";
    DcmMetaInfo meta;
    meta.transferInit();
    OFCondition status = meta.read(stream, EXS_Unknown, EGL_noChange, DCM_MaxReadLength);
    meta.transferEnd();
    OFString uid;
    if (status.bad() || meta.findAndGetOFString(DCM_TransferSyntaxUID, uid).bad() ||
        DcmXfer(uid.c_str()).getStreamCompression() != ESC_zlib) {
        return "";
    }
    return impossibleDeflatedLengthFrom(path, stream.tell());
}

}  // namespace

extern "C" cdcmtk_file *cdcmtk_open(const char *path, uint32_t max_read_length, char *message,
                                    size_t message_capacity) {
    cdcmtk_register_codecs();
    auto write = [&](const std::string &text) { copyMessage(text, message, message_capacity); };
    cdcmtk_file *file = new (std::nothrow) cdcmtk_file;
    if (!file) {
        write("out of memory");
        return nullptr;
    }
    std::string impossible = impossibleDeflatedLength(path);
    if (!impossible.empty()) {
        write(impossible);
        delete file;
        return nullptr;
    }
    OFCondition status = file->format.loadFile(path, EXS_Unknown, EGL_noChange, max_read_length, ERM_autoDetect);
    if (status.bad()) {
        // A second reading for one known inconsistency; when it does not apply, the first error stands.
        cdcmtk_file *retry = new (std::nothrow) cdcmtk_file;
        if (retry && loadImplicitDatasetWithEncapsulatedPixels(retry, path, max_read_length)) {
            delete file;
            return retry;
        }
        delete retry;
        write(status.text());
        delete file;
        return nullptr;
    }
    return file;
}

extern "C" void cdcmtk_close(cdcmtk_file *file) { delete file; }

extern "C" const char *cdcmtk_last_error(const cdcmtk_file *file) { return file ? file->error.c_str() : ""; }

extern "C" cdcmtk_item *cdcmtk_dataset(cdcmtk_file *file) { return asHandle(file->format.getDataset()); }

extern "C" cdcmtk_item *cdcmtk_meta(cdcmtk_file *file) { return asHandle(file->format.getMetaInfo()); }

extern "C" int cdcmtk_transfer_syntax(cdcmtk_file *file, char *buffer, size_t capacity) {
    DcmXfer xfer(file->format.getDataset()->getOriginalXfer());
    return copyString(xfer.getXferID(), buffer, capacity, nullptr);
}

extern "C" int cdcmtk_has(cdcmtk_item *item, uint16_t group, uint16_t element) {
    return item && asItem(item)->tagExists(DcmTagKey(group, element), OFFalse) ? 1 : 0;
}

extern "C" int cdcmtk_value_count(cdcmtk_file *file, cdcmtk_item *item, uint16_t group, uint16_t element,
                                  unsigned long *count) {
    DcmElement *found = nullptr;
    int status = findElement(file, item, group, element, found);
    if (status != CDCMTK_OK) return status;
    if (found->ident() == EVR_SQ) {
        *count = OFstatic_cast(DcmSequenceOfItems *, found)->card();
    } else {
        *count = found->getLength() == 0 ? 0 : found->getVM();
    }
    return CDCMTK_OK;
}

extern "C" int cdcmtk_get_string(cdcmtk_file *file, cdcmtk_item *item, uint16_t group, uint16_t element,
                                 long index, char *buffer, size_t capacity, size_t *needed) {
    DcmElement *found = nullptr;
    int status = findElement(file, item, group, element, found);
    if (status != CDCMTK_OK) return status;
    OFString value;
    OFCondition condition = index < 0 ? found->getOFStringArray(value)
                                      : found->getOFString(value, OFstatic_cast(unsigned long, index));
    if (condition.bad()) {
        return fail(file, tagName(group, element) + ": " + condition.text(),
                    condition == EC_IllegalParameter ? CDCMTK_NOT_FOUND : CDCMTK_ERROR);
    }
    return copyString(std::string(value.c_str(), value.size()), buffer, capacity, needed);
}

extern "C" int cdcmtk_get_uint16s(cdcmtk_file *file, cdcmtk_item *item, uint16_t group, uint16_t element,
                                  uint16_t *buffer, size_t capacity, size_t *count) {
    DcmElement *found = nullptr;
    int status = findElement(file, item, group, element, found);
    if (status != CDCMTK_OK) return status;
    size_t total = found->getLength() / 2;
    *count = total;
    if (total == 0) return CDCMTK_OK;
    const void *words = nullptr;
    OFCondition condition;
    if (found->ident() == EVR_SS) {
        Sint16 *signedWords = nullptr;
        condition = found->getSint16Array(signedWords);
        words = signedWords;
    } else {
        Uint16 *unsignedWords = nullptr;
        condition = found->getUint16Array(unsignedWords);
        words = unsignedWords;
    }
    if (condition.bad() || !words) return fail(file, tagName(group, element) + ": " + condition.text());
    if (capacity < total) return CDCMTK_BUFFER_TOO_SMALL;
    std::memcpy(buffer, words, total * 2);
    return CDCMTK_OK;
}

extern "C" int cdcmtk_sequence_item(cdcmtk_file *file, cdcmtk_item *item, uint16_t group, uint16_t element,
                                    unsigned long index, cdcmtk_item **result) {
    *result = nullptr;
    DcmElement *found = nullptr;
    int status = findElement(file, item, group, element, found);
    if (status != CDCMTK_OK) return status;
    if (found->ident() != EVR_SQ) return fail(file, tagName(group, element) + " is not a sequence");
    DcmItem *child = OFstatic_cast(DcmSequenceOfItems *, found)->getItem(index);
    if (!child) return fail(file, tagName(group, element) + " has no item " + std::to_string(index), CDCMTK_NOT_FOUND);
    *result = asHandle(child);
    return CDCMTK_OK;
}

extern "C" int cdcmtk_dump(cdcmtk_file *file, char *buffer, size_t capacity, size_t *needed) {
    std::ostringstream stream;
    file->format.print(stream, DCMTypes::PF_shortenLongTagValues);
    return copyString(stream.str(), buffer, capacity, needed);
}

extern "C" int cdcmtk_pixel_info(cdcmtk_file *file, int *encapsulated, uint64_t *length, unsigned long *count) {
    int status = CDCMTK_OK;
    DcmPixelData *pixels = pixelData(file, &status);
    if (!pixels) return status;
    E_TransferSyntax original = EXS_Unknown;
    const DcmRepresentationParameter *parameter = nullptr;
    pixels->getOriginalRepresentationKey(original, parameter);
    *encapsulated = DcmXfer(original).isEncapsulated() ? 1 : 0;
    *length = 0;
    *count = 0;
    if (*encapsulated) {
        DcmPixelSequence *sequence = fragments(file, &status);
        if (!sequence) return status;
        unsigned long items = sequence->card();
        *count = items > 0 ? items - 1 : 0;
    } else {
        *length = pixels->getLength();
    }
    return CDCMTK_OK;
}

extern "C" int cdcmtk_read_pixels(cdcmtk_file *file, uint64_t offset, uint32_t length, void *buffer) {
    int status = CDCMTK_OK;
    DcmPixelData *pixels = pixelData(file, &status);
    if (!pixels) return status;
    if (offset + length > pixels->getLength()) return fail(file, "Pixel Data is shorter than the image needs");
    if (offset > 0xffffffffULL) return fail(file, "Pixel Data offset beyond 4 GB");
    // DCMTK swaps 16-bit words in place, so it needs an even window starting at an even offset: an even request
    // is read straight into the caller's buffer, an odd one through a window.
    if (offset % 2 == 0 && length % 2 == 0) {
        OFCondition direct = pixels->getPartialValue(buffer, OFstatic_cast(Uint32, offset), length, nullptr,
                                                     EBO_LittleEndian);
        if (direct.bad()) return fail(file, std::string("reading Pixel Data: ") + direct.text());
        return CDCMTK_OK;
    }
    uint64_t start = offset & ~uint64_t(1);
    uint64_t end = std::min<uint64_t>((offset + length + 1) & ~uint64_t(1), pixels->getLength());
    std::vector<Uint8> window(end - start + 1);
    OFCondition condition = pixels->getPartialValue(window.data(), OFstatic_cast(Uint32, start),
                                                    OFstatic_cast(Uint32, end - start), nullptr,
                                                    EBO_LittleEndian);
    if (condition.bad()) return fail(file, std::string("reading Pixel Data: ") + condition.text());
    std::memcpy(buffer, window.data() + (offset - start), length);
    return CDCMTK_OK;
}

namespace {

/// Fragment `index` (after the basic offset table), or nullptr with `status` set.
DcmPixelItem *fragmentItem(cdcmtk_file *file, unsigned long index, int *status) {
    DcmPixelSequence *sequence = fragments(file, status);
    if (!sequence) return nullptr;
    DcmPixelItem *item = nullptr;
    if (sequence->getItem(item, index + 1).bad() || !item) {
        *status = fail(file, "no fragment " + std::to_string(index), CDCMTK_NOT_FOUND);
        return nullptr;
    }
    return item;
}

}  // namespace

extern "C" int cdcmtk_fragment_length(cdcmtk_file *file, unsigned long index, uint32_t *length) {
    int status = CDCMTK_OK;
    DcmPixelItem *item = fragmentItem(file, index, &status);
    if (!item) return status;
    *length = item->getLength();
    return CDCMTK_OK;
}

extern "C" int cdcmtk_fragment(cdcmtk_file *file, unsigned long index, void *buffer, uint32_t capacity) {
    int status = CDCMTK_OK;
    DcmPixelItem *item = fragmentItem(file, index, &status);
    if (!item) return status;
    Uint32 length = item->getLength();
    if (capacity < length) return CDCMTK_BUFFER_TOO_SMALL;
    if (length == 0) return CDCMTK_OK;
    Uint8 *bytes = nullptr;
    OFCondition condition = item->getUint8Array(bytes);
    if (condition.bad() || !bytes) return fail(file, std::string("reading fragment: ") + condition.text());
    std::memcpy(buffer, bytes, length);
    return CDCMTK_OK;
}

extern "C" int cdcmtk_offset_table(cdcmtk_file *file, uint32_t *offsets, size_t capacity, size_t *count) {
    int status = CDCMTK_OK;
    DcmPixelSequence *sequence = fragments(file, &status);
    if (!sequence) return status;
    *count = 0;
    DcmPixelItem *table = nullptr;
    if (sequence->getItem(table, 0).bad() || !table || table->getLength() == 0) return CDCMTK_OK;
    Uint8 *bytes = nullptr;
    if (table->getUint8Array(bytes).bad() || !bytes) return fail(file, "unreadable basic offset table");
    size_t entries = table->getLength() / 4;
    *count = entries;
    if (capacity < entries) return CDCMTK_BUFFER_TOO_SMALL;
    for (size_t i = 0; i < entries; ++i) {
        const Uint8 *p = bytes + 4 * i;
        offsets[i] = Uint32(p[0]) | (Uint32(p[1]) << 8) | (Uint32(p[2]) << 16) | (Uint32(p[3]) << 24);
    }
    return CDCMTK_OK;
}

extern "C" int cdcmtk_decode_frame(cdcmtk_file *file, uint32_t frame, void *buffer, uint32_t capacity,
                                   char *color_model, size_t color_model_capacity) {
    int status = CDCMTK_OK;
    DcmPixelData *pixels = pixelData(file, &status);
    if (!pixels) return status;
    Uint32 startFragment = 0;
    OFString model;
    OFCondition condition = pixels->getUncompressedFrame(file->format.getDataset(), frame, startFragment, buffer,
                                                         capacity, model, nullptr);
    if (condition.bad()) return fail(file, std::string("decoding frame: ") + condition.text());
    return copyString(std::string(model.c_str()), color_model, color_model_capacity, nullptr);
}

// MARK: - Writing binary DICOM SEG

struct cdcmtk_seg {
    DcmSegmentation *segmentation = nullptr;
    std::string error;
    OFVector<OFString> sources;
    /// Every frame's mask (rows × columns bytes, non-zero = inside) in the order added, to pack Pixel Data.
    std::vector<std::vector<Uint8>> masks;
    size_t pixelsPerFrame = 0;
    ~cdcmtk_seg() { delete segmentation; }
};

namespace {

int segFail(cdcmtk_seg *seg, const std::string &what, const OFCondition &condition) {
    seg->error = what + ": " + condition.text();
    return CDCMTK_ERROR;
}

std::string decimal(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.10g", value);
    std::string result(text);
    return result.size() > 16 ? result.substr(0, 16) : result;  // DS holds 16 characters
}

}  // namespace

extern "C" cdcmtk_seg *cdcmtk_seg_create(const char *source_path, uint16_t rows, uint16_t columns,
                                         const char *series_description, int series_number, char *message,
                                         size_t message_capacity) {
    cdcmtk_register_codecs();
    auto write = [&](const std::string &text) { copyMessage(text, message, message_capacity); };
    auto seg = std::make_unique<cdcmtk_seg>();
    IODGeneralEquipmentModule::EquipmentInfo equipment("SliceLab", "SliceLab", "0", "SliceLab");
    // Content Creator's Name is a PN: family name "SliceLab" in the caret-delimited form (PS3.5 6.2).
    ContentIdentificationMacro content("1", "SLICELAB", series_description ? series_description : "", "SliceLab^");
    OFCondition status = DcmSegmentation::createBinarySegmentation(seg->segmentation, rows, columns, equipment, content);
    if (status.bad() || !seg->segmentation) {
        write(std::string("creating the segmentation: ") + status.text());
        return nullptr;
    }
    seg->pixelsPerFrame = size_t(rows) * columns;
    status = seg->segmentation->importFromSourceImage(OFString(source_path));
    if (status.bad()) {
        write(std::string("importing patient and study from ") + source_path + ": " + status.text());
        return nullptr;
    }
    if (series_description) seg->segmentation->getSeries().setSeriesDescription(series_description);
    seg->segmentation->getSeries().setSeriesNumber(std::to_string(series_number).c_str());
    char uid[100];
    dcmGenerateUniqueIdentifier(uid, SITE_INSTANCE_UID_ROOT);
    IODMultiframeDimensionModule &dimensions = seg->segmentation->getDimensions();
    status = dimensions.addDimensionIndex(DCM_ReferencedSegmentNumber, uid, DCM_SegmentIdentificationSequence,
                                          "ReferencedSegmentNumber");
    if (status.good()) {
        status = dimensions.addDimensionIndex(DCM_ImagePositionPatient, uid, DCM_PlanePositionSequence,
                                              "ImagePositionPatient");
    }
    if (status.bad()) {
        write(std::string("adding dimensions: ") + status.text());
        return nullptr;
    }
    return seg.release();
}

extern "C" const char *cdcmtk_seg_error(const cdcmtk_seg *seg) { return seg ? seg->error.c_str() : ""; }

extern "C" int cdcmtk_seg_add_segment(cdcmtk_seg *seg, const char *label, const char *const *category,
                                      const char *const *type, const char *const *region, uint16_t *number) {
    DcmSegment *segment = nullptr;
    CodeSequenceMacro categoryCode(category[0], category[1], category[2]);
    CodeSequenceMacro typeCode(type[0], type[1], type[2]);
    OFCondition status =
        DcmSegment::create(segment, label, categoryCode, typeCode, DcmSegTypes::SAT_AUTOMATIC, "SliceLab");
    if (status.bad() || !segment) return segFail(seg, "creating segment", status);
    if (region) {
        status = segment->getGeneralAnatomyCode().getAnatomicRegion().set(region[0], region[1], region[2]);
        if (status.bad()) {
            delete segment;
            return segFail(seg, "anatomic region of segment", status);
        }
    }
    Uint16 assigned = 0;
    status = seg->segmentation->addSegment(segment, assigned);
    if (status.bad()) {
        delete segment;
        return segFail(seg, "adding segment", status);
    }
    *number = assigned;
    return CDCMTK_OK;
}

extern "C" int cdcmtk_seg_set_geometry(cdcmtk_seg *seg, const double *o, double row_spacing, double column_spacing,
                                       double slice_thickness) {
    std::unique_ptr<FGPlaneOrientationPatient> orientation(FGPlaneOrientationPatient::createMinimal(
        decimal(o[0]).c_str(), decimal(o[1]).c_str(), decimal(o[2]).c_str(), decimal(o[3]).c_str(),
        decimal(o[4]).c_str(), decimal(o[5]).c_str()));
    if (!orientation) return segFail(seg, "plane orientation", EC_MemoryExhausted);
    OFCondition status = seg->segmentation->addForAllFrames(*orientation);
    if (status.bad()) return segFail(seg, "plane orientation", status);
    FGPixelMeasures measures;
    std::string spacing = decimal(row_spacing) + "\\" + decimal(column_spacing);
    status = measures.setPixelSpacing(spacing.c_str());
    if (status.good()) status = measures.setSliceThickness(decimal(slice_thickness).c_str());
    if (status.good()) status = seg->segmentation->addForAllFrames(measures);
    if (status.bad()) return segFail(seg, "pixel measures", status);
    return CDCMTK_OK;
}

extern "C" int cdcmtk_seg_add_frame(cdcmtk_seg *seg, const uint8_t *pixels, uint16_t segment, const double *p,
                                    const char *source_sop_class_uid, const char *source_sop_instance_uid,
                                    uint32_t source_frame, const char *source_path, uint32_t stack_position) {
    std::unique_ptr<FGPlanePosPatient> position(
        FGPlanePosPatient::createMinimal(decimal(p[0]).c_str(), decimal(p[1]).c_str(), decimal(p[2]).c_str()));
    FGFrameContent content;
    OFCondition status = content.setDimensionIndexValues(segment, 0);
    if (status.good()) status = content.setDimensionIndexValues(stack_position, 1);
    if (status.bad()) return segFail(seg, "frame content", status);
    ImageSOPInstanceReferenceMacro reference;
    status = reference.setReferencedSOPClassUID(source_sop_class_uid);
    if (status.good()) status = reference.setReferencedSOPInstanceUID(source_sop_instance_uid);
    if (status.good() && source_frame > 0) status = reference.addReferencedFrameNumber(Uint16(source_frame));
    if (status.bad()) return segFail(seg, "source reference", status);
    OFVector<ImageSOPInstanceReferenceMacro> references;
    references.push_back(reference);
    std::unique_ptr<FGDerivationImage> derivation(FGDerivationImage::createMinimal(
        references, "Segmentation", CodeSequenceMacro("113076", "DCM", "Segmentation"),
        CodeSequenceMacro("121322", "DCM", "Source image for image processing operation")));
    if (!position || !derivation) return segFail(seg, "frame groups", EC_MemoryExhausted);
    OFVector<FGBase *> groups;
    groups.push_back(position.get());
    groups.push_back(&content);
    groups.push_back(derivation.get());
    status = seg->segmentation->addFrame(const_cast<Uint8 *>(pixels), segment, groups);
    if (status.bad()) return segFail(seg, "adding frame " + std::to_string(stack_position), status);
    seg->masks.emplace_back(pixels, pixels + seg->pixelsPerFrame);
    seg->sources.push_back(source_path);
    return CDCMTK_OK;
}

extern "C" int cdcmtk_seg_set_uids(cdcmtk_seg *seg, const char *series_instance_uid, const char *sop_instance_uid) {
    OFCondition status = seg->segmentation->getSeries().setSeriesInstanceUID(series_instance_uid);
    if (status.good()) status = seg->segmentation->getSOPCommon().setSOPInstanceUID(sop_instance_uid);
    return status.good() ? CDCMTK_OK : segFail(seg, "setting the UIDs", status);
}

extern "C" int cdcmtk_seg_save(cdcmtk_seg *seg, const char *path) {
    IODReferences references;
    OFVector<OFString> unique;
    for (const OFString &source : seg->sources) {
        bool seen = false;
        for (const OFString &known : unique) seen = seen || known == source;
        if (!seen) unique.push_back(source);
    }
    if (references.addFromFiles(unique) != unique.size()) {
        seg->error = "some source images could not be read for the references";
        return CDCMTK_ERROR;
    }
    seg->segmentation->getCommonInstanceReference().addReferences(references);
    // DcmSegmentation::saveFile is writeDataset + saveFile in explicit VR little endian; done here in two steps
    // because DCMTK 3.6.7 packs binary frames wrongly when a frame's pixel count is not a multiple of 8 (from
    // the third frame on, every frame starts a byte early). Pixel Data is packed again as PS3.5 8.1.1 says:
    // frames back to back, bit k of the value is pixel k, least significant bit first, padded to even length.
    DcmFileFormat format;
    OFCondition status = seg->segmentation->writeDataset(*format.getDataset());
    if (status.bad()) return segFail(seg, std::string("building ") + path, status);
    // Each frame is its source slice's pixels, unresampled: say so in every source image item (PS3.3 C.7.6.16.2.6,
    // Spatial Locations Preserved), as highdicom requires before it indexes a SEG by its source frames.
    DcmSequenceOfItems *frames = nullptr;
    if (format.getDataset()->findAndGetSequence(DCM_PerFrameFunctionalGroupsSequence, frames).good() && frames) {
        for (unsigned long f = 0; f < frames->card(); ++f) {
            DcmSequenceOfItems *derivations = nullptr;
            if (frames->getItem(f)->findAndGetSequence(DCM_DerivationImageSequence, derivations).bad()) continue;
            for (unsigned long d = 0; derivations && d < derivations->card(); ++d) {
                DcmSequenceOfItems *sources = nullptr;
                if (derivations->getItem(d)->findAndGetSequence(DCM_SourceImageSequence, sources).bad()) continue;
                for (unsigned long s = 0; sources && s < sources->card(); ++s) {
                    status = sources->getItem(s)->putAndInsertString(DCM_SpatialLocationsPreserved, "YES");
                    if (status.bad()) return segFail(seg, "spatial locations preserved", status);
                }
            }
        }
    }
    size_t bits = seg->masks.size() * seg->pixelsPerFrame;
    std::vector<Uint8> packed(((bits + 7) / 8 + 1) & ~size_t(1), 0);
    size_t bit = 0;
    for (const std::vector<Uint8> &mask : seg->masks) {
        for (Uint8 value : mask) {
            if (value) packed[bit >> 3] |= Uint8(1u << (bit & 7));
            ++bit;
        }
    }
    status = format.getDataset()->putAndInsertUint8Array(DCM_PixelData, packed.data(), Uint32(packed.size()));
    if (status.good()) status = format.saveFile(path, EXS_LittleEndianExplicit);
    if (status.bad()) return segFail(seg, std::string("writing ") + path, status);
    return CDCMTK_OK;
}

extern "C" void cdcmtk_seg_free(cdcmtk_seg *seg) { delete seg; }

// MARK: - RT Structure Sets

namespace {
struct RTContour {
    std::string type, image;
    std::vector<double> points;
};
struct RTROI {
    int32_t number = 0;
    std::string name, frame, type;
    int32_t color[3] = {-1, -1, -1};
    std::vector<RTContour> contours;
};
}  // namespace

struct cdcmtk_rt {
    std::string texts[4];
    std::vector<std::string> images;
    std::vector<RTROI> rois;
};

extern "C" cdcmtk_rt *cdcmtk_rt_read(cdcmtk_file *file, char *message, size_t message_capacity) {
    auto write = [&](const std::string &text) { copyMessage(text, message, message_capacity); };
    DRTStructureSetIOD iod;
    OFCondition status = iod.read(*file->format.getDataset());
    if (status.bad()) {
        write(std::string("not an RT Structure Set: ") + status.text());
        return nullptr;
    }
    auto rt = std::make_unique<cdcmtk_rt>();
    OFString text;
    if (iod.getFrameOfReferenceUID(text).good()) rt->texts[0] = text.c_str();
    if (iod.getStructureSetLabel(text).good()) rt->texts[2] = text.c_str();
    if (iod.getSOPInstanceUID(text).good()) rt->texts[3] = text.c_str();
    DRTReferencedFrameOfReferenceSequence &frames = iod.getReferencedFrameOfReferenceSequence();
    for (size_t f = 0; f < frames.getNumberOfItems(); ++f) {
        DRTReferencedFrameOfReferenceSequence::Item &frame = frames.getItem(f);
        if (rt->texts[0].empty() && frame.getFrameOfReferenceUID(text).good()) rt->texts[0] = text.c_str();
        DRTRTReferencedStudySequence &studies = frame.getRTReferencedStudySequence();
        for (size_t s = 0; s < studies.getNumberOfItems(); ++s) {
            DRTRTReferencedSeriesSequence &series = studies.getItem(s).getRTReferencedSeriesSequence();
            for (size_t r = 0; r < series.getNumberOfItems(); ++r) {
                DRTRTReferencedSeriesSequence::Item &one = series.getItem(r);
                if (rt->texts[1].empty() && one.getSeriesInstanceUID(text).good()) rt->texts[1] = text.c_str();
                DRTContourImageSequence &images = one.getContourImageSequence();
                for (size_t i = 0; i < images.getNumberOfItems(); ++i) {
                    if (images.getItem(i).getReferencedSOPInstanceUID(text).good()) rt->images.push_back(text.c_str());
                }
            }
        }
    }
    DRTStructureSetROISequence &rois = iod.getStructureSetROISequence();
    for (size_t r = 0; r < rois.getNumberOfItems(); ++r) {
        DRTStructureSetROISequence::Item &item = rois.getItem(r);
        RTROI roi;
        Sint32 number = 0;
        if (item.getROINumber(number).bad()) {
            write("Structure Set ROI item " + std::to_string(r + 1) + " has no ROI Number");
            return nullptr;
        }
        roi.number = number;
        if (item.getROIName(text).good()) roi.name = text.c_str();
        if (item.getReferencedFrameOfReferenceUID(text).good()) roi.frame = text.c_str();
        rt->rois.push_back(roi);
    }
    auto find = [&](Sint32 number) -> RTROI * {
        for (auto &roi : rt->rois)
            if (roi.number == number) return &roi;
        return nullptr;
    };
    DRTRTROIObservationsSequence &observations = iod.getRTROIObservationsSequence();
    for (size_t o = 0; o < observations.getNumberOfItems(); ++o) {
        DRTRTROIObservationsSequence::Item &item = observations.getItem(o);
        Sint32 number = 0;
        RTROI *roi = item.getReferencedROINumber(number).good() ? find(number) : nullptr;
        if (roi && item.getRTROIInterpretedType(text).good()) roi->type = text.c_str();
    }
    DRTROIContourSequence &contours = iod.getROIContourSequence();
    for (size_t c = 0; c < contours.getNumberOfItems(); ++c) {
        DRTROIContourSequence::Item &item = contours.getItem(c);
        Sint32 number = 0;
        RTROI *roi = item.getReferencedROINumber(number).good() ? find(number) : nullptr;
        if (!roi) {
            write("ROI Contour item " + std::to_string(c + 1) + " references ROI " + std::to_string(number) +
                  ", which the Structure Set ROI Sequence does not list");
            return nullptr;
        }
        for (int k = 0; k < 3; ++k) {
            Sint32 value = 0;
            if (item.getROIDisplayColor(value, k).good()) roi->color[k] = value;
        }
        DRTContourSequence &sequence = item.getContourSequence();
        for (size_t k = 0; k < sequence.getNumberOfItems(); ++k) {
            DRTContourSequence::Item &contour = sequence.getItem(k);
            RTContour flat;
            if (contour.getContourGeometricType(text).good()) flat.type = text.c_str();
            OFVector<Float64> points;
            contour.getContourData(points);
            flat.points.assign(points.begin(), points.end());
            DRTContourImageSequence &images = contour.getContourImageSequence();
            if (images.getNumberOfItems() > 0 && images.getItem(0).getReferencedSOPInstanceUID(text).good()) {
                flat.image = text.c_str();
            }
            roi->contours.push_back(std::move(flat));
        }
    }
    return rt.release();
}

extern "C" void cdcmtk_rt_free(cdcmtk_rt *rt) { delete rt; }
extern "C" const char *cdcmtk_rt_text(const cdcmtk_rt *rt, int field) {
    return field >= 0 && field < 4 ? rt->texts[field].c_str() : "";
}
extern "C" size_t cdcmtk_rt_referenced_image_count(const cdcmtk_rt *rt) { return rt->images.size(); }
extern "C" const char *cdcmtk_rt_referenced_image(const cdcmtk_rt *rt, size_t index) {
    return rt->images[index].c_str();
}
extern "C" size_t cdcmtk_rt_roi_count(const cdcmtk_rt *rt) { return rt->rois.size(); }
extern "C" int32_t cdcmtk_rt_roi_number(const cdcmtk_rt *rt, size_t index) { return rt->rois[index].number; }
extern "C" const char *cdcmtk_rt_roi_name(const cdcmtk_rt *rt, size_t index) { return rt->rois[index].name.c_str(); }
extern "C" const char *cdcmtk_rt_roi_frame(const cdcmtk_rt *rt, size_t index) {
    return rt->rois[index].frame.c_str();
}
extern "C" void cdcmtk_rt_roi_color(const cdcmtk_rt *rt, size_t index, int32_t *rgb) {
    for (int k = 0; k < 3; ++k) rgb[k] = rt->rois[index].color[k];
}
extern "C" const char *cdcmtk_rt_roi_type(const cdcmtk_rt *rt, size_t index) { return rt->rois[index].type.c_str(); }
extern "C" size_t cdcmtk_rt_contour_count(const cdcmtk_rt *rt, size_t roi) { return rt->rois[roi].contours.size(); }
extern "C" const char *cdcmtk_rt_contour_type(const cdcmtk_rt *rt, size_t roi, size_t contour) {
    return rt->rois[roi].contours[contour].type.c_str();
}
extern "C" const char *cdcmtk_rt_contour_image(const cdcmtk_rt *rt, size_t roi, size_t contour) {
    return rt->rois[roi].contours[contour].image.c_str();
}
extern "C" size_t cdcmtk_rt_contour_point_count(const cdcmtk_rt *rt, size_t roi, size_t contour) {
    return rt->rois[roi].contours[contour].points.size() / 3;
}
extern "C" const double *cdcmtk_rt_contour_points(const cdcmtk_rt *rt, size_t roi, size_t contour) {
    return rt->rois[roi].contours[contour].points.data();
}

// MARK: - Writing RT Structure Sets

struct cdcmtk_rtw {
    DRTStructureSetIOD iod;
    std::string error;
    DRTContourImageSequence *images = nullptr;
    std::vector<std::pair<int32_t, DRTContourSequence *>> contours;
    int32_t contourNumber = 0;
};

namespace {
int rtwFail(cdcmtk_rtw *rtw, const std::string &what, const OFCondition &status) {
    rtw->error = what + ": " + status.text();
    return CDCMTK_ERROR;
}
std::string dicomDate(bool time) {
    OFString text;
    if (time) OFDateTime::getCurrentDateTime().getTime().getISOFormattedTime(text, OFTrue, OFFalse, OFFalse, OFFalse);
    else OFDateTime::getCurrentDateTime().getDate().getISOFormattedDate(text, OFFalse);
    return text.c_str();
}
}  // namespace

extern "C" cdcmtk_rtw *cdcmtk_rtw_create(const char *source_path, const char *label, const char *series_description,
                                         int series_number, char *message, size_t message_capacity) {
    auto write = [&](const std::string &text) { copyMessage(text, message, message_capacity); };
    DcmFileFormat source;
    OFCondition status = source.loadFile(source_path);
    if (status.bad()) {
        write(std::string(source_path) + ": " + status.text());
        return nullptr;
    }
    DcmDataset *dataset = source.getDataset();
    auto rtw = std::make_unique<cdcmtk_rtw>();
    DRTStructureSetIOD &iod = rtw->iod;
    iod.readPatientData(*dataset);
    iod.readStudyData(*dataset);
    OFString frame, indicator, study, series;
    dataset->findAndGetOFString(DCM_FrameOfReferenceUID, frame);
    dataset->findAndGetOFString(DCM_PositionReferenceIndicator, indicator);
    dataset->findAndGetOFString(DCM_StudyInstanceUID, study);
    dataset->findAndGetOFString(DCM_SeriesInstanceUID, series);
    if (frame.empty() || study.empty() || series.empty()) {
        write(std::string(source_path) + ": no Frame of Reference, Study or Series Instance UID to reference");
        return nullptr;
    }
    char uid[100];
    iod.setSOPClassUID(UID_RTStructureSetStorage);
    iod.setSOPInstanceUID(dcmGenerateUniqueIdentifier(uid, SITE_INSTANCE_UID_ROOT));
    iod.setSeriesInstanceUID(dcmGenerateUniqueIdentifier(uid, SITE_SERIES_UID_ROOT));
    iod.setModality("RTSTRUCT");
    iod.setSeriesNumber(std::to_string(series_number).c_str());
    if (series_description) iod.setSeriesDescription(series_description);
    iod.setOperatorsName("");
    iod.setFrameOfReferenceUID(frame);
    iod.setPositionReferenceIndicator(indicator);
    iod.setManufacturer("SliceLab");
    iod.setManufacturerModelName("SliceLab");
    iod.setInstanceNumber("1");
    iod.setStructureSetLabel(label ? label : "SliceLab");
    iod.setStructureSetDate(dicomDate(false).c_str());
    iod.setStructureSetTime(dicomDate(true).c_str());
    iod.setInstanceCreationDate(dicomDate(false).c_str());
    DRTReferencedFrameOfReferenceSequence::Item *frameItem = nullptr;
    DRTRTReferencedStudySequence::Item *studyItem = nullptr;
    DRTRTReferencedSeriesSequence::Item *seriesItem = nullptr;
    if (iod.getReferencedFrameOfReferenceSequence().addItem(frameItem).bad() ||
        frameItem->getRTReferencedStudySequence().addItem(studyItem).bad() ||
        studyItem->getRTReferencedSeriesSequence().addItem(seriesItem).bad()) {
        write("building the Referenced Frame of Reference Sequence failed");
        return nullptr;
    }
    frameItem->setFrameOfReferenceUID(frame);
    // The study is referenced as PS3.3 C.8.8.5 asks: Detached Study Management SOP class, the study's UID.
    studyItem->setReferencedSOPClassUID("1.2.840.10008.3.1.2.3.1");
    studyItem->setReferencedSOPInstanceUID(study);
    seriesItem->setSeriesInstanceUID(series);
    rtw->images = &seriesItem->getContourImageSequence();
    return rtw.release();
}

extern "C" const char *cdcmtk_rtw_error(const cdcmtk_rtw *rtw) { return rtw ? rtw->error.c_str() : ""; }

extern "C" int cdcmtk_rtw_add_image(cdcmtk_rtw *rtw, const char *sop_class_uid, const char *sop_instance_uid) {
    DRTContourImageSequence::Item *item = nullptr;
    OFCondition status = rtw->images->addItem(item);
    if (status.good()) status = item->setReferencedSOPClassUID(sop_class_uid);
    if (status.good()) status = item->setReferencedSOPInstanceUID(sop_instance_uid);
    return status.good() ? CDCMTK_OK : rtwFail(rtw, "referencing an image", status);
}

extern "C" int cdcmtk_rtw_add_roi(cdcmtk_rtw *rtw, int32_t number, const char *name, const int32_t *rgb,
                                  const char *interpreted_type) {
    DRTStructureSetROISequence::Item *roi = nullptr;
    DRTROIContourSequence::Item *contour = nullptr;
    DRTRTROIObservationsSequence::Item *observation = nullptr;
    const std::string numberText = std::to_string(number);
    OFString frame;
    rtw->iod.getFrameOfReferenceUID(frame);
    OFCondition status = rtw->iod.getStructureSetROISequence().addItem(roi);
    if (status.good()) status = roi->setROINumber(numberText.c_str());
    if (status.good()) status = roi->setReferencedFrameOfReferenceUID(frame);
    if (status.good()) status = roi->setROIName(name);
    if (status.good()) status = roi->setROIGenerationAlgorithm("AUTOMATIC");
    if (status.good()) status = rtw->iod.getROIContourSequence().addItem(contour);
    if (status.good()) status = contour->setReferencedROINumber(numberText.c_str());
    if (status.good()) {
        status = contour->setROIDisplayColor(
            (std::to_string(rgb[0]) + "\\" + std::to_string(rgb[1]) + "\\" + std::to_string(rgb[2])).c_str());
    }
    if (status.good()) status = rtw->iod.getRTROIObservationsSequence().addItem(observation);
    if (status.good()) status = observation->setObservationNumber(numberText.c_str());
    if (status.good()) status = observation->setReferencedROINumber(numberText.c_str());
    if (status.good()) status = observation->setRTROIInterpretedType(interpreted_type);
    if (status.good()) status = observation->setROIInterpreter("");
    if (status.bad()) return rtwFail(rtw, std::string("adding ROI ") + name, status);
    rtw->contours.emplace_back(number, &contour->getContourSequence());
    return CDCMTK_OK;
}

extern "C" int cdcmtk_rtw_add_contour(cdcmtk_rtw *rtw, int32_t number, const double *points, size_t count,
                                      const char *sop_class_uid, const char *sop_instance_uid) {
    DRTContourSequence *sequence = nullptr;
    for (auto &entry : rtw->contours)
        if (entry.first == number) sequence = entry.second;
    if (!sequence) {
        rtw->error = "no ROI " + std::to_string(number);
        return CDCMTK_ERROR;
    }
    std::ostringstream data;
    char value[32];
    for (size_t i = 0; i < 3 * count; ++i) {
        std::snprintf(value, sizeof value, "%.4f", points[i]);
        // Trailing zeros trimmed: a DS value holds at most 16 characters.
        std::string text(value);
        while (text.find('.') != std::string::npos && (text.back() == '0' || text.back() == '.')) {
            bool dot = text.back() == '.';
            text.pop_back();
            if (dot) break;
        }
        if (text == "-0") text = "0";
        if (i) data << "\\";
        data << text;
    }
    DRTContourSequence::Item *contour = nullptr;
    DRTContourImageSequence::Item *image = nullptr;
    OFCondition status = sequence->addItem(contour);
    if (status.good()) status = contour->setContourNumber(std::to_string(++rtw->contourNumber).c_str());
    if (status.good()) status = contour->setContourGeometricType("CLOSED_PLANAR");
    if (status.good()) status = contour->setNumberOfContourPoints(std::to_string(count).c_str());
    if (status.good()) status = contour->setContourData(data.str().c_str(), OFFalse);
    if (status.good()) status = contour->getContourImageSequence().addItem(image);
    if (status.good()) status = image->setReferencedSOPClassUID(sop_class_uid);
    if (status.good()) status = image->setReferencedSOPInstanceUID(sop_instance_uid);
    return status.good() ? CDCMTK_OK : rtwFail(rtw, "adding a contour to ROI " + std::to_string(number), status);
}

extern "C" int cdcmtk_rtw_set_uids(cdcmtk_rtw *rtw, const char *series_instance_uid, const char *sop_instance_uid) {
    OFCondition status = rtw->iod.setSeriesInstanceUID(series_instance_uid);
    if (status.good()) status = rtw->iod.setSOPInstanceUID(sop_instance_uid);
    return status.good() ? CDCMTK_OK : rtwFail(rtw, "setting the UIDs", status);
}

extern "C" int cdcmtk_rtw_save(cdcmtk_rtw *rtw, const char *path) {
    DcmFileFormat file;
    OFCondition status = rtw->iod.write(*file.getDataset());
    if (status.good()) status = file.saveFile(path, EXS_LittleEndianExplicit);
    return status.good() ? CDCMTK_OK : rtwFail(rtw, std::string("writing ") + path, status);
}

extern "C" void cdcmtk_rtw_free(cdcmtk_rtw *rtw) { delete rtw; }

// MARK: - DIMSE service class user

namespace {
/// DcmSCU with C-GET's incoming C-STOREs written into one folder, each synced before its status is sent.
class SliceLabSCU : public DcmSCU {
  public:
    using DcmSCU::useSecureConnection;  // protected in DcmSCU
    std::string folder;
    size_t received = 0;
    std::string storeError;

    OFCondition handleSTORERequest(const T_ASC_PresentationContextID presID, DcmDataset *incoming,
                                   OFBool &continueSession, Uint16 &status) override {
        continueSession = OFTrue;
        status = STATUS_STORE_Refused_OutOfResources;
        if (!incoming || folder.empty()) return EC_IllegalParameter;
        OFString abstract, transfer;
        findPresentationContext(presID, abstract, transfer);
        E_TransferSyntax syntax = transfer.empty() ? EXS_LittleEndianExplicit : DcmXfer(transfer.c_str()).getXfer();
        std::string path = folder + "/" + std::to_string(received + 1) + ".dcm";
        DcmFileFormat file(incoming);
        OFCondition written = file.saveFile(path.c_str(), syntax, EET_ExplicitLength, EGL_recalcGL, EPD_noChange,
                                            0, 0, EWM_createNewMeta);
        int descriptor = written.good() ? ::open(path.c_str(), O_RDONLY) : -1;
        bool synced = descriptor >= 0 && ::fsync(descriptor) == 0;
        if (descriptor >= 0) ::close(descriptor);
        if (!written.good() || !synced) {
            storeError = std::string("writing ") + path + ": " + (written.good() ? "fsync failed" : written.text());
            ::unlink(path.c_str());
            return written.good() ? EC_IllegalCall : written;
        }
        received += 1;
        status = STATUS_Success;
        return EC_Normal;
    }
};

OFList<OFString> syntaxes(std::initializer_list<const char *> uids) {
    OFList<OFString> list;
    for (const char *uid : uids)
        if (uid && *uid) list.push_back(uid);
    return list;
}

/// A TLS layer for `role` from PEM files (the BCP 195 profile); NULL with the reason in `message`.
std::unique_ptr<DcmTLSTransportLayer> makeTLS(T_ASC_NetworkRole role, const cdcmtk_tls_files &files, char *message,
                                              size_t message_capacity) {
    auto layer = std::make_unique<DcmTLSTransportLayer>(role, nullptr, OFTrue);
    auto fail = [&](const std::string &reason) {
        copyMessage("TLS: " + reason, message, message_capacity);
        return nullptr;
    };
    auto failed = [&](const std::string &what, const OFCondition &status) {
        return fail(what + ": " + status.text());
    };
    if (!*layer) return fail("OpenSSL could not be initialised");
    OFCondition status;
    if (files.key && files.certificate) {
        if ((status = layer->setPrivateKeyFile(files.key, DCF_Filetype_PEM)).bad())
            return failed(std::string("private key ") + files.key, status);
        if ((status = layer->setCertificateFile(files.certificate, DCF_Filetype_PEM)).bad())
            return failed(std::string("certificate ") + files.certificate, status);
        if (!layer->checkPrivateKeyMatchesCertificate())
            return fail(std::string("the private key ") + files.key + " does not match the certificate " +
                        files.certificate);
    }
    if (files.trust) {
        if ((status = layer->addTrustedCertificateFile(files.trust, DCF_Filetype_PEM)).bad())
            return failed(std::string("trusted certificates ") + files.trust, status);
    } else if (role == NET_REQUESTOR) {
        layer->addTrustedCertificateDir("/etc/ssl/certs", DCF_Filetype_PEM);
    }
    if ((status = layer->setTLSProfile(TSP_Profile_BCP195)).bad()) return failed("profile", status);
    if ((status = layer->activateCipherSuites()).bad()) return failed("cipher suites", status);
    layer->setCertificateVerification(role == NET_REQUESTOR || files.trust ? DCV_requireCertificate
                                                                           : DCV_ignoreCertificate);
    return layer;
}

/// The final sub-operation counts and status of a C-GET's or C-MOVE's responses, which it frees.
void retrievalOutcome(OFList<RetrieveResponse *> &responses, uint16_t *completed, uint16_t *failed,
                      uint16_t *warnings, uint16_t *status) {
    *completed = *failed = *warnings = *status = 0;
    for (RetrieveResponse *response : responses) {
        *status = response->m_status;
        *completed = response->m_numberOfCompletedSubops;
        *failed = response->m_numberOfFailedSubops;
        *warnings = response->m_numberOfWarningSubops;
        delete response;
    }
}

/// "gggg,eeee=value" keys into a query dataset.
bool queryDataset(DcmDataset &dataset, const char *level, const char *const *keys, size_t count, std::string &error) {
    dataset.putAndInsertString(DCM_QueryRetrieveLevel, level);
    for (size_t i = 0; i < count; ++i) {
        std::string key(keys[i]);
        size_t equals = key.find('=');
        unsigned group = 0, element = 0;
        if (equals == std::string::npos || std::sscanf(key.c_str(), "%4x,%4x", &group, &element) != 2) {
            error = "query key '" + key + "' is not gggg,eeee=value";
            return false;
        }
        OFCondition status = dataset.putAndInsertString(DcmTagKey(Uint16(group), Uint16(element)),
                                                        key.substr(equals + 1).c_str());
        if (status.bad()) {
            error = "query key '" + key + "': " + status.text();
            return false;
        }
    }
    return true;
}
}  // namespace

struct cdcmtk_scu {
    std::unique_ptr<DcmTLSTransportLayer> tls;  // outlives `scu`, which uses it
    SliceLabSCU scu;
    std::string error;
    cdcmtk_scu_purpose purpose;
};

extern "C" cdcmtk_scu *cdcmtk_scu_open(const char *host, uint16_t port, const char *called_aet,
                                       const char *calling_aet, cdcmtk_scu_purpose purpose,
                                       const char *const *contexts, size_t context_count, int timeout_seconds,
                                       const cdcmtk_tls_files *tls, char *message, size_t message_capacity) {
    auto write = [&](const std::string &text) { copyMessage(text, message, message_capacity); };
    auto handle = std::make_unique<cdcmtk_scu>();
    handle->purpose = purpose;
    SliceLabSCU &scu = handle->scu;
    scu.setAETitle(calling_aet);
    scu.setPeerHostName(host);
    scu.setPeerPort(port);
    scu.setPeerAETitle(called_aet);
    scu.setConnectionTimeout(timeout_seconds);
    scu.setACSETimeout(Uint32(timeout_seconds));
    scu.setDIMSETimeout(Uint32(timeout_seconds));
    scu.setDIMSEBlockingMode(DIMSE_NONBLOCKING);
    scu.setDatasetConversionMode(OFTrue);
    const char *explicitLE = UID_LittleEndianExplicitTransferSyntax, *implicitLE = UID_LittleEndianImplicitTransferSyntax;
    switch (purpose) {
    case CDCMTK_SCU_ECHO: scu.addPresentationContext(UID_VerificationSOPClass, syntaxes({explicitLE, implicitLE})); break;
    case CDCMTK_SCU_STORE:
        for (size_t i = 0; i < context_count; ++i) {
            std::string pair(contexts[i]);
            size_t bar = pair.find('|');
            std::string sopClass = pair.substr(0, bar), syntax = bar == std::string::npos ? "" : pair.substr(bar + 1);
            OFList<OFString> list = syntaxes({syntax.c_str()});
            // The file's own transfer syntax alone first, then the uncompressed ones DcmSCU can convert to.
            if (!syntax.empty() && syntax != explicitLE && syntax != implicitLE) {
                scu.addPresentationContext(sopClass.c_str(), list);
            }
            scu.addPresentationContext(sopClass.c_str(), syntaxes({explicitLE, implicitLE}));
        }
        break;
    case CDCMTK_SCU_FIND:
        scu.addPresentationContext(UID_FINDStudyRootQueryRetrieveInformationModel, syntaxes({explicitLE, implicitLE}));
        break;
    case CDCMTK_SCU_MOVE:
        scu.addPresentationContext(UID_MOVEStudyRootQueryRetrieveInformationModel, syntaxes({explicitLE, implicitLE}));
        break;
    case CDCMTK_SCU_GET:
        scu.addPresentationContext(UID_GETStudyRootQueryRetrieveInformationModel, syntaxes({explicitLE, implicitLE}));
        // At most 128 presentation contexts: the storage classes an SCU commonly receives.
        for (int i = 0; i < numberOfDcmLongSCUStorageSOPClassUIDs && i < 120; ++i) {
            scu.addPresentationContext(dcmLongSCUStorageSOPClassUIDs[i], syntaxes({explicitLE, implicitLE}),
                                       ASC_SC_ROLE_SCP);
        }
        break;
    }
    if (tls && !(handle->tls = makeTLS(NET_REQUESTOR, *tls, message, message_capacity))) return nullptr;
    OFCondition status = scu.initNetwork();
    // After initNetwork, which creates the network and parameters the TLS layer is set on.
    if (status.good() && handle->tls) status = scu.useSecureConnection(handle->tls.get());
    if (status.good()) status = scu.negotiateAssociation();
    if (status.bad()) {
        write(std::string("association with ") + called_aet + "@" + host + ":" + std::to_string(port) +
              (tls ? " (TLS)" : "") + ": " + status.text());
        return nullptr;
    }
    return handle.release();
}

extern "C" const char *cdcmtk_scu_error(const cdcmtk_scu *scu) { return scu ? scu->error.c_str() : ""; }

extern "C" int cdcmtk_scu_echo(cdcmtk_scu *scu, uint16_t *status) {
    T_ASC_PresentationContextID context = scu->scu.findAnyPresentationContextID(UID_VerificationSOPClass, "");
    OFCondition result = scu->scu.sendECHORequest(context);
    *status = result.good() ? 0 : 0xFFFF;
    if (result.bad()) scu->error = std::string("C-ECHO: ") + result.text();
    return result.good() ? CDCMTK_OK : CDCMTK_ERROR;
}

extern "C" int cdcmtk_scu_store(cdcmtk_scu *scu, const char *path, uint16_t *status) {
    DcmFileFormat file;
    OFCondition result = file.loadFile(path);
    if (result.bad()) {
        scu->error = std::string(path) + ": " + result.text();
        return CDCMTK_ERROR;
    }
    OFString sopClass;
    file.getDataset()->findAndGetOFString(DCM_SOPClassUID, sopClass);
    DcmXfer original(file.getDataset()->getOriginalXfer());
    T_ASC_PresentationContextID context = scu->scu.findPresentationContextID(sopClass, original.getXferID());
    if (context == 0) context = scu->scu.findAnyPresentationContextID(sopClass, "");
    if (context == 0) {
        scu->error = std::string(path) + ": the peer accepted no presentation context for SOP class " + sopClass.c_str();
        *status = 0x0122;  // SOP Class Not Supported
        return CDCMTK_ERROR;
    }
    Uint16 response = 0;
    result = scu->scu.sendSTORERequest(context, "", file.getDataset(), response);
    *status = response;
    if (result.bad()) {
        scu->error = std::string(path) + ": C-STORE: " + result.text();
        return CDCMTK_ERROR;
    }
    return CDCMTK_OK;
}

extern "C" int cdcmtk_scu_find(cdcmtk_scu *scu, const char *level, const char *const *keys, size_t key_count,
                               char **results, size_t *length, uint16_t *status) {
    DcmDataset query;
    if (!queryDataset(query, level, keys, key_count, scu->error)) return CDCMTK_ERROR;
    T_ASC_PresentationContextID context =
        scu->scu.findAnyPresentationContextID(UID_FINDStudyRootQueryRetrieveInformationModel, "");
    OFList<QRResponse *> responses;
    OFCondition result = scu->scu.sendFINDRequest(context, &query, &responses);
    std::string text;
    *status = 0;
    for (QRResponse *response : responses) {
        *status = response->m_status;
        if (response->m_dataset) {
            if (!text.empty()) text += '\x1e';
            DcmDataset *dataset = response->m_dataset;
            for (unsigned long i = 0; i < dataset->card(); ++i) {
                DcmElement *element = dataset->getElement(i);
                OFString value;
                if (!element || element->ident() == EVR_SQ || element->getOFStringArray(value).bad()) continue;
                char tag[16];
                std::snprintf(tag, sizeof tag, "%04x,%04x", element->getGTag(), element->getETag());
                std::string clean(value.c_str());
                for (char &c : clean)
                    if (c == '\n' || c == '\x1e') c = ' ';
                text += std::string(tag) + "=" + clean + "\n";
            }
        }
        delete response;
    }
    if (result.bad()) {
        scu->error = std::string("C-FIND: ") + result.text();
        return CDCMTK_ERROR;
    }
    *results = static_cast<char *>(std::malloc(text.size() + 1));
    if (!*results) return CDCMTK_ERROR;
    std::memcpy(*results, text.c_str(), text.size() + 1);
    *length = text.size();
    return CDCMTK_OK;
}

extern "C" int cdcmtk_scu_get(cdcmtk_scu *scu, const char *level, const char *const *keys, size_t key_count,
                              const char *folder, size_t *received, uint16_t *completed, uint16_t *failed,
                              uint16_t *warnings, uint16_t *status) {
    DcmDataset query;
    if (!queryDataset(query, level, keys, key_count, scu->error)) return CDCMTK_ERROR;
    scu->scu.folder = folder;
    scu->scu.received = 0;
    T_ASC_PresentationContextID context =
        scu->scu.findAnyPresentationContextID(UID_GETStudyRootQueryRetrieveInformationModel, "");
    OFList<RetrieveResponse *> responses;
    OFCondition result = scu->scu.sendCGETRequest(context, &query, &responses);
    *received = scu->scu.received;
    retrievalOutcome(responses, completed, failed, warnings, status);
    if (result.bad() || !scu->scu.storeError.empty()) {
        scu->error = scu->scu.storeError.empty() ? std::string("C-GET: ") + result.text() : scu->scu.storeError;
        return CDCMTK_ERROR;
    }
    return CDCMTK_OK;
}

extern "C" int cdcmtk_scu_move(cdcmtk_scu *scu, const char *level, const char *const *keys, size_t key_count,
                               const char *destination, uint16_t *completed, uint16_t *failed, uint16_t *warnings,
                               uint16_t *status) {
    DcmDataset query;
    if (!queryDataset(query, level, keys, key_count, scu->error)) return CDCMTK_ERROR;
    T_ASC_PresentationContextID context =
        scu->scu.findAnyPresentationContextID(UID_MOVEStudyRootQueryRetrieveInformationModel, "");
    OFList<RetrieveResponse *> responses;
    OFCondition result = scu->scu.sendMOVERequest(context, destination, &query, &responses);
    retrievalOutcome(responses, completed, failed, warnings, status);
    if (result.bad()) {
        scu->error = std::string("C-MOVE: ") + result.text();
        return CDCMTK_ERROR;
    }
    return CDCMTK_OK;
}

extern "C" void cdcmtk_scu_close(cdcmtk_scu *scu) {
    if (!scu) return;
    if (scu->scu.isConnected()) scu->scu.releaseAssociation();
    delete scu;
}

extern "C" void cdcmtk_free(void *pointer) { std::free(pointer); }

// MARK: - Storage service class provider

struct cdcmtk_listener {
    std::unique_ptr<DcmTLSTransportLayer> tls;  // outlives `pool`, which uses it
    std::unique_ptr<DcmBaseSCPPool> pool;
    std::string error;
};

namespace {
/// What every worker of the one listener shares.
struct ListenerSettings {
    std::string aet, incoming, received;
    std::vector<std::string> allowed;
    bool allowAny = false, recordStored = false;
    uint64_t maxInstanceBytes = 0;
    std::vector<std::string> stored;  // under logLock
    std::atomic<unsigned long> counter{0};
    std::mutex logLock;
};
ListenerSettings listenerSettings;

std::string jsonEscape(const std::string &text) {
    std::string out;
    for (char c : text) {
        if (c == '"' || c == '\\') { out += '\\'; out += c; }
        else if (static_cast<unsigned char>(c) < 0x20) out += ' ';
        else out += c;
    }
    return out;
}

void logEvent(const std::string &event, const std::string &fields) {
    std::lock_guard<std::mutex> lock(listenerSettings.logLock);
    std::fprintf(stderr, "{\"time\": %ld, \"event\": \"%s\"%s}\n", long(std::time(nullptr)), event.c_str(),
                 fields.c_str());
    std::fflush(stderr);
}

bool isUID(const OFString &uid) {
    if (uid.empty() || uid.size() > 64) return false;
    bool digit = false;
    for (char c : uid) {
        if (c >= '0' && c <= '9') digit = true;
        else if (c != '.') return false;
    }
    return digit;
}

bool syncPath(const std::string &path, bool directory) {
    int descriptor = ::open(path.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
    if (descriptor < 0) return false;
    bool synced = ::fsync(descriptor) == 0;
    ::close(descriptor);
    return synced;
}

bool makeFolder(const std::string &path) { return ::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST; }

/// One association's worker: C-STOREs into the spool, C-ECHO answered, AE titles checked.
class SpoolSCP : public DcmThreadSCP {
  protected:
    OFBool checkCalledAETitleAccepted(const OFString &called) override {
        return called == listenerSettings.aet.c_str();
    }
    OFBool checkCallingAETitleAccepted(const OFString &calling) override {
        if (listenerSettings.allowAny) return OFTrue;
        for (const std::string &allowed : listenerSettings.allowed)
            if (calling == allowed.c_str()) return OFTrue;
        logEvent("rejected", ", \"calling_aet\": \"" + jsonEscape(calling.c_str()) + "\"");
        return OFFalse;
    }
    OFCondition handleIncomingCommand(T_DIMSE_Message *message, const DcmPresentationContextInfo &info) override {
        if (message->CommandField != DIMSE_C_STORE_RQ) return DcmThreadSCP::handleIncomingCommand(message, info);
        T_DIMSE_C_StoreRQ &request = message->msg.CStoreRQ;
        std::string temporary = listenerSettings.incoming + "/" + std::to_string(::getpid()) + "-" +
                                std::to_string(++listenerSettings.counter) + ".part";
        OFCondition received = receiveSTORERequest(request, info.presentationContextID, temporary.c_str());
        if (received.bad()) {
            ::unlink(temporary.c_str());
            logEvent("receive_failed", ", \"reason\": \"" + jsonEscape(received.text()) + "\"");
            return received;
        }
        Uint16 status = STATUS_Success;
        std::string reason, destination;
        struct stat info_;
        OFString study, series, sop;
        DcmFileFormat file;
        if (::stat(temporary.c_str(), &info_) != 0 || uint64_t(info_.st_size) > listenerSettings.maxInstanceBytes) {
            status = STATUS_STORE_Refused_OutOfResources;
            reason = "instance larger than the bound";
        } else if (file.loadFile(temporary.c_str()).bad()) {
            status = STATUS_STORE_Error_CannotUnderstand;
            reason = "not a readable DICOM data set";
        } else {
            DcmDataset *dataset = file.getDataset();
            dataset->findAndGetOFString(DCM_StudyInstanceUID, study);
            dataset->findAndGetOFString(DCM_SeriesInstanceUID, series);
            dataset->findAndGetOFString(DCM_SOPInstanceUID, sop);
            if (!isUID(study) || !isUID(series) || !isUID(sop)) {
                status = STATUS_STORE_Error_CannotUnderstand;
                reason = "Study, Series or SOP Instance UID is not a UID";
            } else if (sop != request.AffectedSOPInstanceUID) {
                status = STATUS_STORE_Error_DataSetDoesNotMatchSOPClass;
                reason = "the data set's SOP Instance UID is not the one announced";
            } else {
                std::string studyFolder = listenerSettings.received + "/" + study.c_str();
                std::string seriesFolder = studyFolder + "/" + series.c_str();
                destination = seriesFolder + "/" + sop.c_str() + ".dcm";
                if (!syncPath(temporary, false) || !makeFolder(studyFolder) || !makeFolder(seriesFolder) ||
                    ::rename(temporary.c_str(), destination.c_str()) != 0 || !syncPath(seriesFolder, true) ||
                    !syncPath(studyFolder, true)) {
                    status = STATUS_STORE_Refused_OutOfResources;
                    reason = std::string("cannot write the spool: ") + std::strerror(errno);
                }
            }
        }
        if (status != STATUS_Success) {
            ::unlink(temporary.c_str());
            logEvent("refused", ", \"status\": " + std::to_string(status) + ", \"sop\": \"" +
                                    jsonEscape(request.AffectedSOPInstanceUID) + "\", \"reason\": \"" +
                                    jsonEscape(reason) + "\"");
        } else {
            if (listenerSettings.recordStored) {
                std::lock_guard<std::mutex> lock(listenerSettings.logLock);
                listenerSettings.stored.push_back(destination);
            } else {
                logEvent("stored", ", \"series\": \"" + std::string(series.c_str()) + "\", \"sop\": \"" +
                                       std::string(sop.c_str()) + "\"");
            }
        }
        return sendSTOREResponse(info.presentationContextID, request, status);
    }
};
}  // namespace

extern "C" cdcmtk_listener *cdcmtk_listener_create(uint16_t port, const char *aet, const char *incoming,
                                                   const char *received, const char *const *allowed,
                                                   size_t allowed_count, int allow_any, uint16_t max_associations,
                                                   uint32_t max_pdu, uint64_t max_instance_bytes,
                                                   const cdcmtk_tls_files *tls, int record_stored, char *message,
                                                   size_t message_capacity) {
    auto write = [&](const std::string &text) { copyMessage(text, message, message_capacity); };
    cdcmtk_register_codecs();
    listenerSettings.aet = aet;
    listenerSettings.incoming = incoming;
    listenerSettings.received = received;
    listenerSettings.allowed.assign(allowed, allowed + allowed_count);
    listenerSettings.allowAny = allow_any != 0;
    listenerSettings.maxInstanceBytes = max_instance_bytes;
    listenerSettings.recordStored = record_stored != 0;
    listenerSettings.stored.clear();
    auto listener = std::make_unique<cdcmtk_listener>();
    if (tls && !(listener->tls = makeTLS(NET_ACCEPTOR, *tls, message, message_capacity))) return nullptr;
    listener->pool = std::make_unique<DcmSCPPool<SpoolSCP>>();
    DcmSCPConfig &config = listener->pool->getConfig();
    if (listener->tls) config.setTransportLayer(listener->tls.get());
    config.setAETitle(aet);
    config.setPort(port);
    config.setMaxReceivePDULength(max_pdu);
    config.setConnectionBlockingMode(DUL_NOBLOCK);
    config.setConnectionTimeout(1);
    config.setACSETimeout(30);
    config.setDIMSETimeout(60);
    config.setHostLookupEnabled(OFFalse);
    OFList<OFString> syntaxes;
    for (const char *uid : {UID_LittleEndianExplicitTransferSyntax, UID_LittleEndianImplicitTransferSyntax,
                            UID_BigEndianExplicitTransferSyntax, UID_DeflatedExplicitVRLittleEndianTransferSyntax,
                            UID_JPEGProcess1TransferSyntax, UID_JPEGProcess14SV1TransferSyntax,
                            UID_JPEGLSLosslessTransferSyntax, UID_JPEG2000LosslessOnlyTransferSyntax,
                            UID_JPEG2000TransferSyntax, UID_RLELosslessTransferSyntax})
        syntaxes.push_back(uid);
    OFList<OFString> uncompressed;
    uncompressed.push_back(UID_LittleEndianExplicitTransferSyntax);
    uncompressed.push_back(UID_LittleEndianImplicitTransferSyntax);
    OFCondition status = config.addPresentationContext(UID_VerificationSOPClass, uncompressed);
    // An association profile holds at most 128 contexts: the 120 storage classes DCMTK lists as those an SCU
    // commonly sends (every image class, SEG, RT), then others up to the bound.
    std::vector<std::string> classes(dcmLongSCUStorageSOPClassUIDs,
                                     dcmLongSCUStorageSOPClassUIDs + numberOfDcmLongSCUStorageSOPClassUIDs);
    for (int i = 0; i < numberOfDcmAllStorageSOPClassUIDs && classes.size() < 127; ++i) {
        if (std::find(classes.begin(), classes.end(), dcmAllStorageSOPClassUIDs[i]) == classes.end())
            classes.push_back(dcmAllStorageSOPClassUIDs[i]);
    }
    for (size_t i = 0; status.good() && i < classes.size(); ++i) {
        status = config.addPresentationContext(classes[i].c_str(), syntaxes);
    }
    if (status.bad()) {
        write(std::string("presentation contexts: ") + status.text());
        return nullptr;
    }
    listener->pool->setMaxThreads(max_associations);
    return listener.release();
}

extern "C" int cdcmtk_listener_run(cdcmtk_listener *listener) {
    OFCondition status = listener->pool->listen();
    if (status.bad()) {
        listener->error = status.text();
        return CDCMTK_ERROR;
    }
    return CDCMTK_OK;
}

extern "C" void cdcmtk_listener_stop(cdcmtk_listener *listener) { listener->pool->stopAfterCurrentAssociations(); }

extern "C" const char *cdcmtk_listener_error(const cdcmtk_listener *listener) {
    return listener ? listener->error.c_str() : "";
}

extern "C" char *cdcmtk_listener_stored(cdcmtk_listener *) {
    std::string text;
    {
        std::lock_guard<std::mutex> lock(listenerSettings.logLock);
        for (const std::string &path : listenerSettings.stored) text += path + "\n";
    }
    char *copy = static_cast<char *>(std::malloc(text.size() + 1));
    if (copy) std::memcpy(copy, text.c_str(), text.size() + 1);
    return copy;
}

extern "C" void cdcmtk_listener_free(cdcmtk_listener *listener) {
    delete listener;
}
