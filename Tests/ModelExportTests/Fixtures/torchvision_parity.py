"""Loads `slicelab export --format torchvision` output (PREFIX.safetensors, PREFIX.json) into torchvision's own
constructors, as the README's Export section shows, runs it in eval mode on IN.h5's /image and compares its
`out` with SliceLab's logits (LOGITS.h5's /logits). Prints one JSON line:
{"torch": version, "torchvision": version, "ratio": max|Δ|/max|logit|, "constructor": …}.

Needs torch and torchvision (Datasets/goldens/requirements-deeplab.txt), which `make test`'s .venv does not
have; ModelExportTests runs it with SLICELAB_TORCH_PYTHON, or skips with the reason.

Usage: python torchvision_parity.py PREFIX IN.h5 LOGITS.h5 [GOLDEN.h5]
With GOLDEN.h5 it also writes torchvision's logits there (/out) with the SHA-256 of the safetensors file it
loaded and the peer versions, the committed goldens `make test` checks without PyTorch.
"""
import hashlib
import json
import sys

import h5py
import numpy as np
import safetensors.torch
import torch
from torch import nn


def import_torchvision():
    """torchvision's PyPI wheel is a CUDA build: with a CPU-only torch its import fails until the operator
    `torchvision::nms` is defined; define it and import again."""
    try:
        import torchvision
    except RuntimeError:
        for name in [n for n in sys.modules if n.startswith("torchvision")]:
            del sys.modules[name]
        library = torch.library.Library("torchvision", "DEF")
        library.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        import_torchvision.library = library  # keep the definition alive
        import torchvision
    return torchvision


def build(configuration):
    """The README's recipe: torchvision's factory for ResNet-50/101, DeepLabV3 over IntermediateLayerGetter for
    ResNet-18/34 (BasicBlock refuses dilation, so layer3 and layer4 are dilated by hand as
    replace_stride_with_dilation=[False, True, True] dilates Bottlenecks)."""
    torchvision = import_torchvision()
    from torchvision.models import resnet
    from torchvision.models._utils import IntermediateLayerGetter
    from torchvision.models.segmentation import deeplabv3
    from torchvision.models.segmentation.fcn import FCNHead

    arch, k, aux = configuration["arch"], configuration["num_classes"], configuration["aux_loss"]
    if arch in ("deeplabv3_resnet50", "deeplabv3_resnet101"):
        model = getattr(deeplabv3, arch)(weights=None, weights_backbone=None, num_classes=k, aux_loss=aux)
    else:
        net = getattr(resnet, arch.removeprefix("deeplabv3_"))(weights=None)
        for name, previous, dilation in (("layer3", 1, 2), ("layer4", 2, 4)):
            for b, block in enumerate(getattr(net, name)):
                d = previous if b == 0 else dilation
                for conv in (block.conv1, block.conv2):
                    conv.stride, conv.dilation, conv.padding = (1, 1), (d, d), (d, d)
                if block.downsample is not None:
                    block.downsample[0].stride = (1, 1)
        layers = {"layer4": "out", "layer3": "aux"} if aux else {"layer4": "out"}
        model = deeplabv3.DeepLabV3(IntermediateLayerGetter(net, layers), deeplabv3.DeepLabHead(512, k),
                                    FCNHead(256, k) if aux else None)
    if configuration["in_channels"] == 1:
        model.backbone.conv1 = nn.Conv2d(1, 64, 7, 2, 3, bias=False)
    return torchvision, model


def main(prefix, input_path, logits_path, golden_path=None):
    with open(prefix + ".json") as f:
        configuration = json.load(f)
    torchvision, model = build(configuration)
    model.load_state_dict(safetensors.torch.load_file(prefix + ".safetensors"), strict=True)
    model.eval()
    with h5py.File(input_path, "r") as f:
        image = torch.from_numpy(np.asarray(f["/image"], dtype=np.float32))
    with h5py.File(logits_path, "r") as f:
        reference = np.asarray(f["/logits"], dtype=np.float32)
    with torch.no_grad():
        out = model(image)["out"].numpy()
    if golden_path:
        with open(prefix + ".safetensors", "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        with h5py.File(golden_path, "w") as f:
            f["out"] = out
            f.attrs["safetensors_sha256"] = digest
            f.attrs["torch"], f.attrs["torchvision"] = str(torch.__version__), str(torchvision.__version__)
            f.attrs["constructor"] = configuration["constructor"]
    print(json.dumps({
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "constructor": configuration["constructor"],
        "ratio": float(np.abs(out - reference).max()) / float(np.abs(reference).max()),
        "shape": list(out.shape),
    }))


if __name__ == "__main__":
    main(*sys.argv[1:5])
