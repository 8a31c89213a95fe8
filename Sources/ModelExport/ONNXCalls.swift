import CONNX
import DeepLab
import Foundation

/// Owns one `connx_model` handle; each call turns a C status into `ExportError.onnx` carrying the C message.
final class ONNXModel {
    private let handle: OpaquePointer

    /// Rests on `connx_model_create`.
    init(graphName: String, opset: Int) throws {
        guard let handle = connx_model_create(graphName, Int64(opset)) else {
            throw ExportError.onnx(call: "connx_model_create", message: "out of memory")
        }
        self.handle = handle
    }

    deinit { connx_model_free(handle) }

    static var libraryVersion: String { String(cString: connx_version()) }

    private func check(_ status: Int32, _ call: String) throws {
        guard status == Int32(CONNX_OK) else {
            throw ExportError.onnx(call: call, message: String(cString: connx_last_error(handle)))
        }
    }

    /// Rests on `connx_set_producer`.
    func setProducer(_ name: String, version: String) { connx_set_producer(handle, name, version) }

    /// Rests on `connx_add_metadata`.
    func addMetadata(_ key: String, _ value: String) { connx_add_metadata(handle, key, value) }

    /// Rests on `connx_add_float_initializer`.
    func addInitializer(_ name: String, shape: [Int], floats: [Float]) throws {
        let dims = shape.map(Int64.init)
        try check(connx_add_float_initializer(handle, name, floats, dims, dims.count), "connx_add_float_initializer")
    }

    /// Rests on `connx_add_int64_initializer`.
    func addInitializer(_ name: String, shape: [Int], integers: [Int64]) throws {
        let dims = shape.map(Int64.init)
        try check(connx_add_int64_initializer(handle, name, integers, dims, dims.count), "connx_add_int64_initializer")
    }

    /// A graph input or output; a nil dimension is symbolic, named in `names`. Rests on `connx_add_value`.
    func addValue(_ name: String, output: Bool, elementType: Int32, dims: [(size: Int?, name: String)]) throws {
        let sizes = dims.map { Int64($0.size ?? -1) }
        try withCStrings(dims.map(\.name)) { names in
            try check(
                connx_add_value(handle, output ? 1 : 0, name, elementType, sizes.count, sizes, names),
                "connx_add_value")
        }
    }

    /// Rests on `connx_add_node` and `connx_set_*_attribute`.
    func addNode(_ node: InferenceGraph.Node) throws {
        try withCStrings(node.inputs) { inputs in
            try withCStrings(node.outputs) { outputs in
                try check(
                    connx_add_node(
                        handle, node.operation, node.name, inputs, node.inputs.count, outputs,
                        node.outputs.count), "connx_add_node")
            }
        }
        for (key, value) in node.attributes {
            switch value {
            case .int(let v): try check(connx_set_int_attribute(handle, key, Int64(v)), "connx_set_int_attribute")
            case .ints(let v):
                let values = v.map(Int64.init)
                try check(connx_set_ints_attribute(handle, key, values, values.count), "connx_set_ints_attribute")
            case .float(let v): try check(connx_set_float_attribute(handle, key, v), "connx_set_float_attribute")
            case .string(let v): try check(connx_set_string_attribute(handle, key, v), "connx_set_string_attribute")
            }
        }
    }

    /// Rests on `connx_check_and_infer` (`onnx::checker::check_model`, `onnx::shape_inference::InferShapes`).
    func checkAndInferShapes() throws { try check(connx_check_and_infer(handle), "connx_check_and_infer") }

    /// Rests on `connx_save`.
    func save(to path: String) throws { try check(connx_save(handle, path), "connx_save") }
}

/// ONNX's element type numbers (TensorProto.DataType) the exporter uses.
enum ONNXElementType {
    static let float = Int32(CONNX_FLOAT)
    static let int64 = Int32(CONNX_INT64)
}

/// Calls `body` with a C array of C strings that live for the call.
private func withCStrings<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) throws -> R) rethrows -> R {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    return try body(copies.map { UnsafePointer($0) })
}
