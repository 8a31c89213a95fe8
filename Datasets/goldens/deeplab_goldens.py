"""Reference logits for SliceLab's DeepLabV3 engine from torchvision (issue #4).

Builds every architecture from torchvision's modules, fills every parameter and buffer from a deterministic
formula that Tests/DeepLabTests/DeterministicWeights.swift reproduces, feeds a deterministic input, and
writes only the expected logits (eval mode) plus each model's state_dict key list and shapes to
Tests/DeepLabTests/Fixtures/deeplab_goldens.h5. Also writes a small real safetensors file (F32, F16, BF16,
I64 tensors) for the parser's tests.

torchvision ships DeepLabV3 factories only for ResNet-50/101; ResNet-18/34 and MobileNetV2 are composed from
its blocks the same way. torchvision's BasicBlock refuses dilation, so the dilated 3x3 convolutions are
patched in afterwards (every 3x3 of a block in a dilated stage takes the block's dilation: the previous
stage's dilation for the first block, the new one for the rest, as Bottleneck does). MobileNetV2 replaces
the stride of the first block that would exceed the output stride by dilation, as torchvision's
MobileNetV3 DeepLab does, and takes its auxiliary features after features[6] (the last stride-8 block).

Run: /work/goldens-venv/bin/python Datasets/goldens/deeplab_goldens.py
"""
import json
import pathlib

import h5py
import numpy as np
import safetensors
import safetensors.torch
import torch
import torchvision
from torch import nn
from torchvision.models import mobilenet_v2, resnet
from torchvision.models._utils import IntermediateLayerGetter
from torchvision.models.segmentation.deeplabv3 import ASPP, DeepLabV3
from torchvision.models.segmentation.fcn import FCNHead

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "Tests/DeepLabTests/Fixtures"


def key_hash(key):
    return sum((i + 1) * b for i, b in enumerate(key.encode("utf-8")))


def uniform(count, salt):
    """Uniform values in [-1, 1) from a SplitMix64 hash of (flat index, salt): exact integer arithmetic, so
    Swift reproduces every bit."""
    with np.errstate(over="ignore"):
        z = np.arange(count, dtype=np.uint64) + np.uint64(salt) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53 * 2.0 - 1.0


def deterministic_value(key, shape):
    """The formula both sides share: hashed uniforms, salted by the key, scaled by the tensor's role."""
    n = int(np.prod(shape)) if len(shape) else 1
    u = uniform(n, key_hash(key))
    if key.endswith("num_batches_tracked"):
        v = np.zeros(n)
    elif key.endswith("running_var"):
        v = 1.0 + 0.5 * u
    elif key.endswith("running_mean"):
        v = 0.2 * u
    elif len(shape) == 4:
        fan_in = shape[1] * shape[2] * shape[3]
        v = np.sqrt(6.0 / fan_in) * u
    elif key.endswith("weight"):
        v = 1.0 + 0.25 * u
    else:
        v = 0.1 * u
    return v.astype(np.float32).reshape(shape)


def write_keys(group, state):
    """A state_dict's keys, in order, with their ranks and flattened shapes (what the Swift parity tests compare)."""
    group.create_dataset("keys", data=np.array(list(state.keys()), dtype=h5py.string_dtype()))
    group.create_dataset("key_ranks", data=np.array([t.dim() for t in state.values()], dtype=np.int64))
    group.create_dataset("key_shapes", data=np.array([s for t in state.values() for s in t.shape], dtype=np.int64))


def deterministic_input(shape):
    return uniform(int(np.prod(shape)), 12345).astype(np.float32).reshape(shape)


def head(in_channels, num_classes, rates, channels):
    return nn.Sequential(ASPP(in_channels, rates, channels), nn.Conv2d(channels, channels, 3, padding=1, bias=False),
                         nn.BatchNorm2d(channels), nn.ReLU(), nn.Conv2d(channels, num_classes, 1))


def dilate_basic_blocks(net, replace):
    """torchvision's _make_layer dilation rule applied to BasicBlock (which refuses dilation itself)."""
    dilation = 1
    for index, flag in enumerate(replace):
        layer = getattr(net, f"layer{index + 2}")
        previous = dilation
        if not flag:
            continue
        dilation *= 2
        for b, block in enumerate(layer):
            d = previous if b == 0 else dilation
            for conv in (block.conv1, block.conv2):
                conv.stride, conv.dilation, conv.padding = (1, 1), (d, d), (d, d)
            if block.downsample is not None:
                block.downsample[0].stride = (1, 1)


def resnet_deeplab(depth, num_classes, in_channels, output_stride, rates, channels, aux):
    replace = [False, output_stride <= 8, output_stride <= 16]
    if depth in (18, 34):
        net = getattr(resnet, f"resnet{depth}")(weights=None)
        dilate_basic_blocks(net, replace)
        expansion = 1
    else:
        net = getattr(resnet, f"resnet{depth}")(weights=None, replace_stride_with_dilation=replace)
        expansion = 4
    if in_channels != 3:
        net.conv1 = nn.Conv2d(in_channels, 64, 7, 2, 3, bias=False)
    layers = {"layer4": "out"}
    if aux:
        layers["layer3"] = "aux"
    backbone = IntermediateLayerGetter(net, layers)
    aux_head = FCNHead(256 * expansion, num_classes) if aux else None
    return DeepLabV3(backbone, head(512 * expansion, num_classes, rates, channels), aux_head)


def mobilenet_deeplab(num_classes, in_channels, output_stride, rates, channels, aux, width):
    features = mobilenet_v2(weights=None, width_mult=width).features
    if in_channels != 3:
        old = features[0][0]
        features[0][0] = nn.Conv2d(in_channels, old.out_channels, 3, 2, 1, bias=False)
    stride, dilation = 2, 1
    for block in features[1:-1]:
        s = block.stride
        if s > 1 and stride * s > output_stride:
            dilation *= s
            s = 1
        else:
            stride *= s
        dw = next(m for m in block.modules() if isinstance(m, nn.Conv2d) and m.groups > 1)
        dw.stride, dw.dilation, dw.padding = (s, s), (dilation, dilation), (dilation, dilation)
    layers = {str(len(features) - 1): "out"}
    if aux:
        layers["6"] = "aux"
    backbone = IntermediateLayerGetter(features, layers)
    aux_head = FCNHead(features[6].out_channels, num_classes) if aux else None
    return DeepLabV3(backbone, head(features[-1].out_channels, num_classes, rates, channels), aux_head)


CASES = [
    # name, arch, K, C, N, H, W, output stride, rates, ASPP channels, aux, width
    ("resnet18_c1_97x131", "deeplabv3_resnet18", 3, 1, 2, 97, 131, 8, [12, 24, 36], 256, False, 1.0),
    ("resnet18_c3_os16", "deeplabv3_resnet18", 3, 3, 1, 40, 36, 16, [6, 12, 18], 64, False, 1.0),
    ("resnet34_c3_45x37", "deeplabv3_resnet34", 4, 3, 2, 45, 37, 8, [12, 24, 36], 256, False, 1.0),
    ("resnet50_c3_aux", "deeplabv3_resnet50", 21, 3, 2, 33, 41, 8, [12, 24, 36], 256, True, 1.0),
    ("resnet101_c1_33x41", "deeplabv3_resnet101", 2, 1, 2, 33, 41, 8, [12, 24, 36], 256, False, 1.0),
    ("mobilenet_v2_c3_aux", "deeplabv3_mobilenet_v2", 5, 3, 2, 65, 49, 8, [12, 24, 36], 256, True, 1.0),
    ("mobilenet_v2_c1_w05_os16", "deeplabv3_mobilenet_v2", 2, 1, 2, 51, 47, 16, [6, 12, 18], 128, False, 0.5),
]


def build(arch, k, c, os_, rates, channels, aux, width):
    if arch == "deeplabv3_mobilenet_v2":
        return mobilenet_deeplab(k, c, os_, rates, channels, aux, width)
    return resnet_deeplab(int(arch.removeprefix("deeplabv3_resnet")), k, c, os_, rates, channels, aux)


def main():
    torch.manual_seed(0)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "deeplab_goldens.h5"
    with h5py.File(path, "w") as f:
        f.attrs["torch"] = str(torch.__version__)
        f.attrs["torchvision"] = str(torchvision.__version__)
        f.attrs["generator"] = "Datasets/goldens/deeplab_goldens.py"
        for name, arch, k, c, n, h, w, os_, rates, channels, aux, width in CASES:
            model = build(arch, k, c, os_, rates, channels, aux, width).eval()
            state = model.state_dict()
            with torch.no_grad():
                for key, tensor in state.items():
                    tensor.copy_(torch.from_numpy(deterministic_value(key, tuple(tensor.shape))))
                x = torch.from_numpy(deterministic_input((n, c, h, w)))
                result = model(x)
            g = f.create_group(name)
            config = {"arch": arch, "numClasses": k, "inputChannels": c, "outputStride": os_,
                      "atrousRates": rates, "asppChannels": channels, "aux": aux, "widthMultiplier": width,
                      "seed": 0}
            g.attrs["configuration"] = json.dumps(config)
            g.attrs["input_shape"] = [n, c, h, w]
            write_keys(g, state)
            g.create_dataset("logits", data=result["out"].numpy(), compression="gzip")
            if aux:
                g.create_dataset("aux_logits", data=result["aux"].numpy(), compression="gzip")
            print(f"{name}: {arch} logits {tuple(result['out'].shape)} max|logit| {result['out'].abs().max():.4g}")

    tensors = {
        "f32": torch.tensor([[1.5, -2.25, 3.0], [0.0, 1e-3, -7.5]], dtype=torch.float32),
        "f16": torch.tensor([0.5, -1.25, 65504.0, 6.1035156e-05], dtype=torch.float16),
        "bf16": torch.tensor([[1.0, -3.0], [0.15625, 1e30]], dtype=torch.bfloat16),
        "i64": torch.tensor(7, dtype=torch.int64),
    }
    safetensors.torch.save_file(tensors, str(OUT / "small.safetensors"), metadata={"format": "pt"})
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, safetensors {safetensors.__version__}")


if __name__ == "__main__":
    main()
