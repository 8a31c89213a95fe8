"""Loads a `slicelab export --format coreml` package with coremltools (no prediction: that needs macOS) and
prints its interface and op counts as one JSON line:
{"coremltools": version, "inputs": [{"name", "type", "width", "height", "color"}], "outputs": [{"name",
 "type", "shape"}], "ops": {type: count}, "metadata": {…}}.

Usage: python coreml_inspect.py MODEL.mlpackage
"""
import collections
import json
import sys

import coremltools as ct


def main(path):
    spec = ct.models.MLModel(path, skip_model_load=True).get_spec()
    inputs = [{"name": i.name, "type": i.type.WhichOneof("Type"), "width": i.type.imageType.width,
               "height": i.type.imageType.height,
               "color": ct.proto.FeatureTypes_pb2.ImageFeatureType.ColorSpace.Name(i.type.imageType.colorSpace)}
              for i in spec.description.input]
    outputs = [{"name": o.name, "type": ct.proto.FeatureTypes_pb2.ArrayFeatureType.ArrayDataType.Name(
                    o.type.multiArrayType.dataType),
                "shape": list(o.type.multiArrayType.shape)} for o in spec.description.output]
    ops = collections.Counter()
    for function in spec.mlProgram.functions.values():
        for block in function.block_specializations.values():
            for op in block.operations:
                ops[op.type] += 1
    print(json.dumps({"coremltools": ct.__version__, "spec_version": spec.specificationVersion,
                      "inputs": inputs, "outputs": outputs, "ops": dict(ops),
                      "metadata": dict(spec.description.metadata.userDefined)}))


if __name__ == "__main__":
    main(sys.argv[1])
