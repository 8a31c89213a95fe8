// A flat C API over DCMTK: opaque handles, status codes with messages, caller-owned buffers.
// The only header of the package that DCMTK sits behind; no DCMTK type crosses it.
#ifndef CDCMTK_H
#define CDCMTK_H
#ifdef __cplusplus
extern "C" {
#endif

/// Registers DCMTK's JPEG, JPEG-LS and RLE decoders once; safe to call from any thread, any number of times.
void cdcmtk_register_codecs(void);

/// The DCMTK version string, e.g. "3.6.7".
const char *cdcmtk_version(void);

#ifdef __cplusplus
}
#endif
#endif
