"""Reference logits for SliceLab's DeepLabV3+ decoder from segmentation-models-pytorch (issue #37).

Builds `segmentation_models_pytorch.DeepLabV3Plus` (its defaults: encoder output stride 16, separable ASPP,
48 low-level channels, align-corners upsampling, a 1 x 1 segmentation head), fills every parameter and buffer
from the formula deeplab_goldens.py and Tests/DeepLabTestSupport/DeterministicWeights.swift share (keyed by
smp's own state_dict names, which SliceLab's V3+ models carry), feeds the deterministic input, and writes the
eval-mode logits with the key list and shapes to Tests/DeepLabTests/Fixtures/deeplabv3plus_goldens.h5.

smp takes heights and widths divisible by the output stride only; SliceLab's decoder takes any size (the ASPP
features are resized to the low-level features' size), which these cases leave to the Swift tests.

Run: python Datasets/goldens/deeplabv3plus_goldens.py (requirements-deeplabv3plus.txt)
"""
import json
import pathlib

import h5py
import numpy as np
import segmentation_models_pytorch as smp
import torch

from deeplab_goldens import deterministic_input, deterministic_value, write_keys

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "Tests/DeepLabTests/Fixtures"

CASES = [
    # name, encoder, SliceLab architecture, K, C, N, H, W, output stride, rates, decoder channels
    ("v3plus_resnet18_c1", "resnet18", "deeplabv3_resnet18", 3, 1, 2, 64, 48, 16, [12, 24, 36], 256),
    ("v3plus_resnet50_c3_os8", "resnet50", "deeplabv3_resnet50", 4, 3, 1, 40, 56, 8, [6, 12, 18], 128),
    ("v3plus_mobilenet_v2_c1", "mobilenet_v2", "deeplabv3_mobilenet_v2", 2, 1, 2, 80, 64, 16, [12, 24, 36], 256),
    ("v3plus_mobilenet_v2_c3_os8", "mobilenet_v2", "deeplabv3_mobilenet_v2", 5, 3, 1, 48, 32, 8, [6, 12, 18], 64),
]


def main():
    torch.manual_seed(0)
    OUT.mkdir(parents=True, exist_ok=True)
    with h5py.File(OUT / "deeplabv3plus_goldens.h5", "w") as f:
        f.attrs["torch"] = str(torch.__version__)
        f.attrs["segmentation_models_pytorch"] = str(smp.__version__)
        f.attrs["generator"] = "Datasets/goldens/deeplabv3plus_goldens.py"
        for name, encoder, arch, k, c, n, h, w, os_, rates, channels in CASES:
            model = smp.DeepLabV3Plus(
                encoder_name=encoder, encoder_weights=None, encoder_output_stride=os_, decoder_channels=channels,
                decoder_atrous_rates=tuple(rates), in_channels=c, classes=k).eval()
            state = model.state_dict()
            with torch.no_grad():
                for key, tensor in state.items():
                    tensor.copy_(torch.from_numpy(deterministic_value(key, tuple(tensor.shape))))
                logits = model(torch.from_numpy(deterministic_input((n, c, h, w))))
            g = f.create_group(name)
            config = {"arch": arch, "decoder": "v3plus", "numClasses": k, "inputChannels": c, "outputStride": os_,
                      "atrousRates": rates, "asppChannels": channels, "aux": False, "widthMultiplier": 1.0,
                      "seed": 0}
            g.attrs["configuration"] = json.dumps(config)
            g.attrs["input_shape"] = [n, c, h, w]
            write_keys(g, state)
            g.create_dataset("logits", data=logits.numpy(), compression="gzip")
            print(f"{name}: {encoder} logits {tuple(logits.shape)} max|logit| {logits.abs().max():.4g}")
    print(f"torch {torch.__version__}, segmentation_models_pytorch {smp.__version__}")


if __name__ == "__main__":
    main()
