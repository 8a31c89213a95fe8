// A flat C API over ONNX's own library (libonnx 1.12): build a model, check it, infer its shapes, save it.
// Opaque handles, status codes with messages, caller-owned buffers; the only header of the package that ONNX
// sits behind, and no ONNX or protobuf type crosses it.
#ifndef CONNX_H
#define CONNX_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/// Status codes returned by every call that can fail; the message is in `connx_last_error`.
enum {
    CONNX_OK = 0,
    CONNX_ERROR = 1,
};

/// Element types, numbered as ONNX's TensorProto.DataType numbers them.
enum {
    CONNX_FLOAT = 1,
    CONNX_INT64 = 7,
};

/// A model under construction (ModelProto). Owns everything added to it.
typedef struct connx_model connx_model;

/// The ONNX library's version string, e.g. "1.12.0".
const char *connx_version(void);

/// A new model with one graph named `graph_name`, importing the default domain at `opset`.
connx_model *connx_model_create(const char *graph_name, int64_t opset);
/// Frees a model made by `connx_model_create`; NULL is ignored.
void connx_model_free(connx_model *model);
/// The message of the last failed call on `model`.
const char *connx_last_error(const connx_model *model);

/// Sets producer name and version, and adds one `metadata_props` entry per call of `connx_add_metadata`.
void connx_set_producer(connx_model *model, const char *name, const char *version);
void connx_add_metadata(connx_model *model, const char *key, const char *value);

/// Adds a constant tensor (an initializer) of `rank` dimensions `dims`; values are copied.
int connx_add_float_initializer(connx_model *model, const char *name, const float *values, const int64_t *dims,
                                size_t rank);
int connx_add_int64_initializer(connx_model *model, const char *name, const int64_t *values, const int64_t *dims,
                                size_t rank);

/// Declares a graph input (`is_output` 0) or output (1) of element type `element_type` and `rank` dimensions:
/// `dims[i]` ≥ 0 is fixed, otherwise the dimension is symbolic, named `dim_names[i]`.
int connx_add_value(connx_model *model, int is_output, const char *name, int element_type, size_t rank,
                    const int64_t *dims, const char *const *dim_names);

/// Appends a node; the `connx_set_*_attribute` calls that follow apply to it.
int connx_add_node(connx_model *model, const char *op_type, const char *name, const char *const *inputs,
                   size_t input_count, const char *const *outputs, size_t output_count);
int connx_set_int_attribute(connx_model *model, const char *key, int64_t value);
int connx_set_ints_attribute(connx_model *model, const char *key, const int64_t *values, size_t count);
int connx_set_float_attribute(connx_model *model, const char *key, float value);
int connx_set_string_attribute(connx_model *model, const char *key, const char *value);

/// Runs `onnx::checker::check_model`, then `onnx::shape_inference::InferShapes` (strict: node errors throw,
/// types checked), which records the inferred intermediate shapes in the graph's value_info.
int connx_check_and_infer(connx_model *model);
/// Serialises the model to `path` (binary protobuf).
int connx_save(connx_model *model, const char *path);

#ifdef __cplusplus
}
#endif
#endif
