"""Core ML against ONNX Runtime on the same image (macOS only: coremltools predicts nowhere else).

Usage: coreml_parity.py PACKAGE.mlpackage MODEL.onnx HEIGHT WIDTH CHANNELS
Feeds one seeded random 8-bit image to the Core ML package (an image input scaled by 1/255) and the same
pixels / 255 to the ONNX model, and prints JSON with the share of pixels whose labels agree.
"""
import json
import sys

import coremltools as ct
import numpy as np
import onnxruntime as ort
from PIL import Image

package, onnx_path, height, width, channels = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
pixels = np.random.default_rng(0).integers(0, 256, (height, width, channels), dtype=np.uint8)
image = Image.fromarray(pixels[..., 0] if channels == 1 else pixels, "L" if channels == 1 else "RGB")
coreml = np.asarray(ct.models.MLModel(package).predict({"image": image})["semanticPredictions"])
x = (pixels.astype(np.float32) / 255).transpose(2, 0, 1)[None]
session = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
reference = session.run(["labels"], {"image": x})[0][0]
print(json.dumps({"agreement": float((coreml == reference).mean())}))
