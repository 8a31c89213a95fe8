"""Counts the nodes of an ONNX model by op type and prints them as one JSON object.

Usage: python onnx_ops.py MODEL.onnx
"""
import collections
import json
import sys

import onnx

print(json.dumps(collections.Counter(node.op_type for node in onnx.load(sys.argv[1]).graph.node)))
