"""Converts a SliceLab ONNX export into a Core ML ML Program (.mlpackage) with Apple's DeepLabV3 interface,
op by op with coremltools' MIL builder (one MIL op per ONNX compute op; shapes are fixed, so Shape, Concat of
shapes and Expand become constants and a tile).

Interface: input `image`, an image of H × W (RGB for 3-channel models, grayscale for 1-channel), pixel values
scaled by 1/255 (0…1); output `semanticPredictions` Int32 [H, W], the argmax over classes.

Run by `slicelab export --format coreml` with SLICELAB_PYTHON (else the package's .venv python).
Usage: python coreml_converter.py MODEL.onnx OUT.mlpackage HEIGHT WIDTH
Exit status 3 with one line naming the missing package when coremltools or onnx cannot be imported.
"""
import json
import os
import shutil
import sys
import tempfile

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb
except ImportError as error:
    print(f"{error.name} is not installed for {sys.executable}: pip install coremltools onnx", file=sys.stderr)
    sys.exit(3)


def attributes(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def text(value):
    return value.decode() if isinstance(value, bytes) else value


def convert(graph, height, width, channels):
    constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, channels, height, width))],
                opset_version=ct.target.iOS16)
    def program(image):
        values = {graph.input[0].name: image}

        def value(name):
            return values[name] if name in values else constants[name]

        for node in graph.node:
            a, inputs, out = attributes(node), list(node.input), node.output[0]
            op = node.op_type
            if op == "Conv":
                pads = a["pads"]
                y = mb.conv(x=value(inputs[0]), weight=constants[inputs[1]], bias=constants[inputs[2]],
                            strides=a["strides"], pad_type="custom",
                            pad=[pads[0], pads[2], pads[1], pads[3]], dilations=a["dilations"],
                            groups=a.get("group", 1), name=node.name)
            elif op == "Relu":
                y = mb.relu(x=value(inputs[0]), name=node.name)
            elif op == "Clip":
                y = mb.clip(x=value(inputs[0]), alpha=float(constants[inputs[1]]), beta=float(constants[inputs[2]]),
                            name=node.name)
            elif op == "Add":
                y = mb.add(x=value(inputs[0]), y=value(inputs[1]), name=node.name)
            elif op == "MaxPool":
                pads = a["pads"]
                y = mb.max_pool(x=value(inputs[0]), kernel_sizes=a["kernel_shape"], strides=a["strides"],
                                pad_type="custom", pad=[pads[0], pads[2], pads[1], pads[3]], name=node.name)
            elif op == "GlobalAveragePool":
                y = mb.reduce_mean(x=value(inputs[0]), axes=[2, 3], keep_dims=True, name=node.name)
            elif op == "Shape":
                shape = np.array(value(inputs[0]).shape, dtype=np.int64)
                y = shape[a.get("start", 0):a.get("end", len(shape))]
            elif op == "Concat" and all(not hasattr(value(i), "op") for i in inputs):
                y = np.concatenate([value(i) for i in inputs], axis=a["axis"])
            elif op == "Concat":
                y = mb.concat(values=[value(i) for i in inputs], axis=a["axis"], name=node.name)
            elif op == "Expand":
                x, shape = value(inputs[0]), value(inputs[1])
                y = mb.tile(x=x, reps=[int(t // s) for t, s in zip(shape, x.shape)], name=node.name)
            elif op == "Resize":
                x = value(inputs[0])
                if len(inputs) > 3 and inputs[3]:
                    size = [int(s) for s in value(inputs[3])[2:]]
                else:
                    size = [int(round(s * f)) for s, f in zip(x.shape[2:], constants[inputs[2]][2:])]
                modes = {"half_pixel": "UNALIGN_CORNERS", "align_corners": "ALIGN_CORNERS"}
                mode = modes.get(text(a.get("coordinate_transformation_mode")))
                if text(a.get("mode")) != "linear" or mode is None:
                    raise ValueError(f"{node.name}: only bilinear half-pixel or align-corners Resize is converted")
                y = mb.resize_bilinear(x=x, target_size_height=size[0], target_size_width=size[1],
                                       sampling_mode=mode, name=node.name)
            elif op == "ArgMax":
                labels = mb.reduce_argmax(x=value(inputs[0]), axis=a["axis"], keep_dims=False)
                y = mb.squeeze(x=mb.cast(x=labels, dtype="int32"), axes=[0], name="semanticPredictions")
            else:
                raise ValueError(f"{node.name}: ONNX op {op} has no conversion")
            values[out] = y
        return values[graph.output[1].name]

    return program


def input_scaling(preprocessing):
    """The image input's scale and bias (value = scale × pixel + bias, per channel) for the checkpoint's
    preprocessing where it is linear in the 8-bit pixel: none (the pixel as it is) and a window (its linear part;
    the clip to [0, 1] is not applied, so pixels outside the window give values outside [0, 1]); otherwise
    (percentiles, z-score, min-max, which depend on the whole image) pixels / 255, and the app normalises first."""
    kind = preprocessing.get("normalize", "none")
    if kind == "none":
        return 1.0, 0.0, "image pixels as they are (0…255)"
    if kind == "window":
        center, width = float(preprocessing["center"]), float(preprocessing["width"])
        low = center - width / 2
        return 1 / width, -low / width, f"image pixels windowed: (pixel − {low:g}) / {width:g}, not clipped"
    return 1 / 255, 0.0, f"image pixels scaled by 1/255; apply the {kind} normalisation to the image first"


def main(onnx_path, package_path, height, width):
    model = onnx.load(onnx_path)
    metadata = {p.key: p.value for p in model.metadata_props}
    scale, bias, described = input_scaling(json.loads(metadata.get("slicelab.preprocessing", "{}")))
    channels = model.graph.input[0].type.tensor_type.shape.dim[1].dim_value
    program = convert(model.graph, height, width, channels)
    color = ct.colorlayout.RGB if channels == 3 else ct.colorlayout.GRAYSCALE
    mlmodel = ct.convert(program, convert_to="mlprogram", minimum_deployment_target=ct.target.iOS16,
                         inputs=[ct.ImageType(name="image", shape=(1, channels, height, width), scale=scale,
                                              bias=[bias] * channels if channels == 3 else bias,
                                              color_layout=color)],
                         compute_precision=ct.precision.FLOAT32)
    mlmodel.short_description = "DeepLabV3 semantic segmentation exported by SliceLab"
    mlmodel.author = "slicelab export"
    mlmodel.user_defined_metadata.update(metadata)
    mlmodel.user_defined_metadata["slicelab.coreml_input"] = described
    # coremltools insists on the .mlpackage extension; the caller's folder (an atomic-write temporary) has
    # another, so the package is saved beside it and its contents moved in.
    with tempfile.TemporaryDirectory() as scratch:
        saved = os.path.join(scratch, "model.mlpackage")
        mlmodel.save(saved)
        os.makedirs(package_path, exist_ok=True)
        for entry in os.listdir(saved):
            shutil.move(os.path.join(saved, entry), os.path.join(package_path, entry))
    print(json.dumps({"coremltools": ct.__version__, "conv": sum(n.op_type == "Conv" for n in model.graph.node)}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
