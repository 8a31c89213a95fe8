"""An independent reference for SliceLab's bf16 path: the exported ONNX model (batch norm folded into its Conv
weights, as SliceLab infers) run in ONNX Runtime (CPU, f32, graph optimisations off) after rounding to bf16,
round-to-nearest-even, exactly where SliceLab's bf16 convolutions hold bf16: the weights of every Conv named in
UNITS (numpy bit arithmetic) and that Conv's input (Cast to BFLOAT16 and back, inserted before it). Every other
value stays f32, as in SliceLab: biases, Conv outputs, Add, Relu, pooling, Resize, and the Conv nodes not named
(the classifier and ASPP's image pooling).

Compares with SliceLab's logits of the same input (BF16.h5's /logits, from `segment --precision bf16
--raw-input`) and its f32 logits (F32.h5). Rounding to bf16 is discontinuous: a value that f32 summation order
moves across a rounding midpoint lands one bf16 step (2^-8 relative) away, and such flips propagate. So the
reference's own sensitivity is measured too, as the distance between its logits and its logits on the input
perturbed by 1e-6 relative noise; SliceLab's bf16 logits should be that close to the reference, and its f32
logits (no rounding) further. Prints one JSON line:
{"onnxruntime": version, "onnx": version, "converted": Conv nodes rounded, "cast_rounds_to_nearest_even": bool,
 "labels_agree": fraction of pixels where SliceLab bf16's argmax equals the reference's,
 "labels_agree_f32": SliceLab f32's argmax against the reference's,
 "ratio", "ratio_f32", "ratio_perturbed": max|SliceLab bf16, SliceLab f32, perturbed reference - reference| /
 max|reference|, "mean", "mean_f32", "mean_perturbed": the same with mean|Δ| / max|reference|}.

Usage: python bf16_reference.py MODEL.onnx IN.h5 BF16.h5 F32.h5 UNIT[,UNIT…]
"""
import json
import sys

import h5py
import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper


def bf16_round(values):
    """f32 values rounded to the nearest bf16 (ties to even), widened back to f32; NaN stays NaN."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(values), values, rounded).astype(np.float32)


def cast_session(model):
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def cast_rounds_to_nearest_even():
    """Whether ONNX Runtime's Cast float → bfloat16 rounds as `bf16_round` on ties, near-ties and random values."""
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["b"], to=TensorProto.BFLOAT16),
         helper.make_node("Cast", ["b"], ["y"], to=TensorProto.FLOAT)],
        "cast", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None])])
    session = cast_session(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    ties = np.array([0x3F808000, 0x3F818000, 0x3F808001, 0x3F80FFFF, 0xBF808000, 0x00008000], dtype=np.uint32)
    x = np.concatenate([ties.view(np.float32), np.random.default_rng(0).standard_normal(10000).astype(np.float32)])
    return bool(np.array_equal(session.run(None, {"x": x})[0], bf16_round(x)))


def rounded_model(path, units):
    model = onnx.load(path)
    initializers = {t.name: t for t in model.graph.initializer}
    nodes, converted = [], 0
    for node in model.graph.node:
        if node.op_type == "Conv" and node.name in units:
            weight = initializers[node.input[1]]
            weight.CopyFrom(numpy_helper.from_array(bf16_round(numpy_helper.to_array(weight)), weight.name))
            narrow, wide = node.name + ".bf16_input", node.name + ".bf16_input_f32"
            nodes.append(helper.make_node("Cast", [node.input[0]], [narrow], to=TensorProto.BFLOAT16))
            nodes.append(helper.make_node("Cast", [narrow], [wide], to=TensorProto.FLOAT))
            node.input[0] = wide
            converted += 1
        nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    missing = set(units) - {n.name for n in model.graph.node if n.op_type == "Conv"}
    if missing:
        raise SystemExit(f"bf16_reference.py: no Conv node named {sorted(missing)}")
    return model, converted


def main(model_path, input_path, bf16_path, f32_path, unit_list):
    units = unit_list.split(",")
    with h5py.File(input_path, "r") as f:
        image = np.asarray(f["/image"], dtype=np.float32)
    with h5py.File(bf16_path, "r") as f:
        bf16 = np.asarray(f["/logits"], dtype=np.float32)
    with h5py.File(f32_path, "r") as f:
        f32 = np.asarray(f["/logits"], dtype=np.float32)
    model, converted = rounded_model(model_path, units)
    session = cast_session(model)
    reference = session.run(["logits"], {"image": image})[0]
    noise = np.random.default_rng(0).standard_normal(image.shape).astype(np.float32)
    perturbed = session.run(["logits"], {"image": image * (1 + 1e-6 * noise)})[0]
    scale = float(np.abs(reference).max())
    labels = reference.argmax(axis=1)
    report = {
        "onnxruntime": onnxruntime.__version__,
        "onnx": onnx.__version__,
        "converted": converted,
        "cast_rounds_to_nearest_even": cast_rounds_to_nearest_even(),
        "labels_agree": float(np.mean(bf16.argmax(axis=1) == labels)),
        "labels_agree_f32": float(np.mean(f32.argmax(axis=1) == labels)),
    }
    for suffix, logits in [("", bf16), ("_f32", f32), ("_perturbed", perturbed)]:
        report["ratio" + suffix] = float(np.abs(logits - reference).max()) / scale
        report["mean" + suffix] = float(np.abs(logits - reference).mean()) / scale
    print(json.dumps(report))


if __name__ == "__main__":
    main(*sys.argv[1:6])
