// OpenJPEG 2.5 (libopenjp2-7-dev): JPEG 2000 decoding, which the free DCMTK lacks.
#ifndef COPENJPEG_SHIM_H
#define COPENJPEG_SHIM_H
#include <openjpeg.h>
#endif
