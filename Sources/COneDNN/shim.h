// oneDNN 2.6 C API as Debian 12 ships it (libdnnl-dev). The installed dnnl.h is the reference.
#ifndef CONEDNN_SHIM_H
#define CONEDNN_SHIM_H
#include <dnnl.h>
#include <dnnl_debug.h>
#endif
