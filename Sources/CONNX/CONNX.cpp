// The flat C API of CONNX.h over ONNX's C++ library. Every ONNX exception stops here and becomes a status
// with its message.
#include "CONNX.h"

#include <onnx/checker.h>
#include <onnx/common/version.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <exception>
#include <fstream>
#include <string>

struct connx_model {
    onnx::ModelProto proto;
    onnx::NodeProto *node = nullptr;
    std::string error;
};

namespace {
int fail(connx_model *model, const std::string &message) {
    model->error = message;
    return CONNX_ERROR;
}

/// Runs `body`, turning any exception into a status with its message.
template <typename Body> int guarded(connx_model *model, const char *what, Body body) {
    if (!model) return CONNX_ERROR;
    try {
        return body();
    } catch (const std::exception &e) {
        return fail(model, std::string(what) + ": " + e.what());
    } catch (...) {
        return fail(model, std::string(what) + ": unknown exception");
    }
}

onnx::AttributeProto *addAttribute(connx_model *model, const char *key, onnx::AttributeProto_AttributeType type) {
    onnx::AttributeProto *attribute = model->node->add_attribute();
    attribute->set_name(key);
    attribute->set_type(type);
    return attribute;
}

template <typename T, typename Add>
int addInitializer(connx_model *model, const char *name, const T *values, const int64_t *dims, size_t rank,
                   int type, Add add) {
    return guarded(model, "initializer", [&] {
        onnx::TensorProto *tensor = model->proto.mutable_graph()->add_initializer();
        tensor->set_name(name);
        tensor->set_data_type(type);
        size_t count = 1;
        for (size_t i = 0; i < rank; ++i) {
            tensor->add_dims(dims[i]);
            count *= size_t(dims[i]);
        }
        add(tensor, values, count);
        return CONNX_OK;
    });
}
}  // namespace

extern "C" const char *connx_version(void) { return onnx::LAST_RELEASE_VERSION; }

extern "C" connx_model *connx_model_create(const char *graph_name, int64_t opset) {
    try {
        auto *model = new connx_model();
        model->proto.set_ir_version(onnx::IR_VERSION);
        onnx::OperatorSetIdProto *import = model->proto.add_opset_import();
        import->set_domain("");
        import->set_version(opset);
        model->proto.mutable_graph()->set_name(graph_name);
        return model;
    } catch (...) {
        return nullptr;
    }
}

extern "C" void connx_model_free(connx_model *model) { delete model; }

extern "C" const char *connx_last_error(const connx_model *model) {
    return model ? model->error.c_str() : "no model";
}

extern "C" void connx_set_producer(connx_model *model, const char *name, const char *version) {
    model->proto.set_producer_name(name);
    model->proto.set_producer_version(version);
}

extern "C" void connx_add_metadata(connx_model *model, const char *key, const char *value) {
    onnx::StringStringEntryProto *entry = model->proto.add_metadata_props();
    entry->set_key(key);
    entry->set_value(value);
}

extern "C" int connx_add_float_initializer(connx_model *model, const char *name, const float *values,
                                           const int64_t *dims, size_t rank) {
    return addInitializer(model, name, values, dims, rank, onnx::TensorProto_DataType_FLOAT,
                          [](onnx::TensorProto *t, const float *v, size_t n) {
                              t->set_raw_data(std::string(reinterpret_cast<const char *>(v), n * sizeof(float)));
                          });
}

extern "C" int connx_add_int64_initializer(connx_model *model, const char *name, const int64_t *values,
                                           const int64_t *dims, size_t rank) {
    return addInitializer(model, name, values, dims, rank, onnx::TensorProto_DataType_INT64,
                          [](onnx::TensorProto *t, const int64_t *v, size_t n) {
                              for (size_t i = 0; i < n; ++i) t->add_int64_data(v[i]);
                          });
}

extern "C" int connx_add_value(connx_model *model, int is_output, const char *name, int element_type, size_t rank,
                               const int64_t *dims, const char *const *dim_names) {
    return guarded(model, "graph value", [&] {
        onnx::GraphProto *graph = model->proto.mutable_graph();
        onnx::ValueInfoProto *value = is_output ? graph->add_output() : graph->add_input();
        value->set_name(name);
        onnx::TypeProto_Tensor *tensor = value->mutable_type()->mutable_tensor_type();
        tensor->set_elem_type(element_type);
        onnx::TensorShapeProto *shape = tensor->mutable_shape();
        for (size_t i = 0; i < rank; ++i) {
            onnx::TensorShapeProto_Dimension *dim = shape->add_dim();
            if (dims[i] >= 0) dim->set_dim_value(dims[i]);
            else dim->set_dim_param(dim_names[i]);
        }
        return CONNX_OK;
    });
}

extern "C" int connx_add_node(connx_model *model, const char *op_type, const char *name, const char *const *inputs,
                              size_t input_count, const char *const *outputs, size_t output_count) {
    return guarded(model, "node", [&] {
        onnx::NodeProto *node = model->proto.mutable_graph()->add_node();
        node->set_op_type(op_type);
        node->set_name(name);
        for (size_t i = 0; i < input_count; ++i) node->add_input(inputs[i]);
        for (size_t i = 0; i < output_count; ++i) node->add_output(outputs[i]);
        model->node = node;
        return CONNX_OK;
    });
}

extern "C" int connx_set_int_attribute(connx_model *model, const char *key, int64_t value) {
    if (!model->node) return fail(model, "attribute before any node");
    addAttribute(model, key, onnx::AttributeProto_AttributeType_INT)->set_i(value);
    return CONNX_OK;
}

extern "C" int connx_set_ints_attribute(connx_model *model, const char *key, const int64_t *values, size_t count) {
    if (!model->node) return fail(model, "attribute before any node");
    onnx::AttributeProto *attribute = addAttribute(model, key, onnx::AttributeProto_AttributeType_INTS);
    for (size_t i = 0; i < count; ++i) attribute->add_ints(values[i]);
    return CONNX_OK;
}

extern "C" int connx_set_float_attribute(connx_model *model, const char *key, float value) {
    if (!model->node) return fail(model, "attribute before any node");
    addAttribute(model, key, onnx::AttributeProto_AttributeType_FLOAT)->set_f(value);
    return CONNX_OK;
}

extern "C" int connx_set_string_attribute(connx_model *model, const char *key, const char *value) {
    if (!model->node) return fail(model, "attribute before any node");
    addAttribute(model, key, onnx::AttributeProto_AttributeType_STRING)->set_s(value);
    return CONNX_OK;
}

extern "C" int connx_check_and_infer(connx_model *model) {
    int status = guarded(model, "onnx::checker::check_model", [&] {
        onnx::checker::check_model(model->proto);
        return CONNX_OK;
    });
    if (status != CONNX_OK) return status;
    return guarded(model, "onnx::shape_inference::InferShapes", [&] {
        onnx::ShapeInferenceOptions options(/*check_type*/ true, /*strict_mode*/ 1, /*data_prop*/ false);
        onnx::shape_inference::InferShapes(model->proto, onnx::OpSchemaRegistry::Instance(), options);
        return CONNX_OK;
    });
}

extern "C" int connx_save(connx_model *model, const char *path) {
    return guarded(model, "save", [&]() -> int {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        if (!out) return fail(model, std::string("cannot open ") + path + " for writing");
        if (!model->proto.SerializeToOstream(&out)) return fail(model, std::string("cannot serialise to ") + path);
        out.close();
        if (!out) return fail(model, std::string("cannot write ") + path);
        return CONNX_OK;
    });
}
