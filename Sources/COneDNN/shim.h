// oneDNN 2.6 C API as Debian 12 ships it (libdnnl-dev). The installed dnnl.h is the reference.
#ifndef CONEDNN_SHIM_H
#define CONEDNN_SHIM_H
#include <dnnl.h>
#include <dnnl_debug.h>

// Macros that Swift cannot import, as functions.
static inline int conednn_arg_src(void) { return DNNL_ARG_SRC; }
static inline int conednn_arg_src_1(void) { return DNNL_ARG_SRC_1; }
static inline int conednn_arg_dst(void) { return DNNL_ARG_DST; }
static inline int conednn_arg_weights(void) { return DNNL_ARG_WEIGHTS; }
static inline int conednn_arg_bias(void) { return DNNL_ARG_BIAS; }
static inline int conednn_arg_mean(void) { return DNNL_ARG_MEAN; }
static inline int conednn_arg_variance(void) { return DNNL_ARG_VARIANCE; }
static inline int conednn_arg_scale(void) { return DNNL_ARG_SCALE; }
static inline int conednn_arg_shift(void) { return DNNL_ARG_SHIFT; }
static inline int conednn_arg_workspace(void) { return DNNL_ARG_WORKSPACE; }
static inline int conednn_arg_diff_src(void) { return DNNL_ARG_DIFF_SRC; }
static inline int conednn_arg_diff_dst(void) { return DNNL_ARG_DIFF_DST; }
static inline int conednn_arg_diff_weights(void) { return DNNL_ARG_DIFF_WEIGHTS; }
static inline int conednn_arg_diff_bias(void) { return DNNL_ARG_DIFF_BIAS; }
static inline int conednn_arg_diff_scale(void) { return DNNL_ARG_DIFF_SCALE; }
static inline int conednn_arg_diff_shift(void) { return DNNL_ARG_DIFF_SHIFT; }
static inline int conednn_arg_multiple_src(void) { return DNNL_ARG_MULTIPLE_SRC; }
#endif
