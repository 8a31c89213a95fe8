"""Runs an exported ONNX model in ONNX Runtime (CPU) and OpenVINO (CPU, f32) on IN.h5's /image and compares
the logits with SliceLab's (LOGITS.h5's /logits). Prints one JSON line:
{"onnxruntime": version, "openvino": version, "ort_ratio": max|Δ|/max|logit|, "openvino_ratio": …,
 "labels_agree": fraction of pixels whose `labels` output equals the argmax of the runtime's own logits,
 "labels_shape": […], "logits_shape": […], "metadata": the model's metadata_props}.

Usage: python onnx_parity.py MODEL.onnx IN.h5 LOGITS.h5
"""
import json
import sys

import h5py
import numpy as np
import onnxruntime
import openvino


def main(model_path, input_path, logits_path):
    with h5py.File(input_path, "r") as f:
        image = np.asarray(f["/image"], dtype=np.float32)
    with h5py.File(logits_path, "r") as f:
        reference = np.asarray(f["/logits"], dtype=np.float32)
    scale = float(np.abs(reference).max())

    session = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    ort_logits, ort_labels = session.run(["logits", "labels"], {"image": image})

    core = openvino.Core()
    compiled = core.compile_model(core.read_model(model_path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled({"image": image})
    ov_logits = np.asarray(result[compiled.output("logits")])

    print(json.dumps({
        "onnxruntime": onnxruntime.__version__,
        "openvino": openvino.__version__,
        "ort_ratio": float(np.abs(ort_logits - reference).max()) / scale,
        "openvino_ratio": float(np.abs(ov_logits - reference).max()) / scale,
        "labels_agree": float(np.mean(ort_labels == ort_logits.argmax(axis=1))),
        "labels_dtype": str(ort_labels.dtype),
        "labels_shape": list(ort_labels.shape),
        "logits_shape": list(ort_logits.shape),
        "metadata": dict(session.get_modelmeta().custom_metadata_map),
    }))


if __name__ == "__main__":
    main(*sys.argv[1:4])
