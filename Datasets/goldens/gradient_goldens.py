"""Whole-model training gradients from PyTorch autograd, in float64, for SliceLab's gradient tests (issue #22).

The models of Tests/DeepLabTests/GradientCheckTests.swift's whole-model check (ResNet-18 and MobileNetV2 × 0.35,
one input channel, 3 classes, output stride 16, ASPP rates [2, 3] with 8 channels, auxiliary head), built from
torchvision's modules by Datasets/goldens/deeplab_goldens.py, and DeepLabV3+ over ResNet-18 and MobileNetV2 from
segmentation-models-pytorch (rates [2, 3, 4], 8 channels, no auxiliary head, 48 x 32 and 64 x 48 inputs as smp needs sizes
divisible by 16), all filled with the same deterministic weights; the
input and the loss directions R, R_aux are the same hashed uniforms (salts 12345, 777, 778). Training mode (batch
norm on batch statistics), dropout off, L = Σ out·R + Σ aux·R_aux. Autograd runs in float64, so the golden is the
exact gradient up to float64 rounding, whatever kernels either side uses: it decides between an engine's float32
gradient and a badly conditioned finite difference without being one of them.

Written to Tests/DeepLabTests/Fixtures/gradient_goldens.h5, one group per case:
  <param>/indices   int64   flat indices checked: every element of tensors up to 1,024 elements, else
                            1,024 evenly spaced ones plus the 16 of largest |gradient|
  <param>/float64   float64 autograd's gradient at those indices (float64 model)
  attrs: max_abs (largest |gradient| over the whole tensor, float64 model), float32_deviation (the largest
         |float32 − float64| over the whole tensor among three float32 PyTorch runs whose kernels sum in different
         orders: the default, channels-last, and oneDNN off: how far float32 rounding alone moves this gradient)
  the case's attrs: floor (FLOOR × the model's largest |gradient|, added to max_abs as a tensor's scale)
The script prints, per case, PyTorch float32's largest deviation from float64 relative to each tensor's scale, and the central differences (step 1e-3, as the Swift check takes) in float32 and float64 of the
element the issue names, to show which side a disagreement is on.

Run: /work/goldens-venv/bin/python Datasets/goldens/gradient_goldens.py (requirements-deeplabv3plus.txt)
"""
import json
import pathlib
import sys

import h5py
import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import segmentation_models_pytorch as smp  # noqa: E402
from deeplab_goldens import build, deterministic_input, deterministic_value, uniform  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "Tests/DeepLabTests/Fixtures/gradient_goldens.h5"
CASES = [  # name, torchvision-style arch, decoder, width multiplier, (H, W), the watched element
    ("resnet18", "deeplabv3_resnet18", "v3", 1.0, (21, 19), 1360),
    ("mobilenet_v2", "deeplabv3_mobilenet_v2", "v3", 0.35, (21, 19), 7620),
    ("v3plus_resnet18", "deeplabv3_resnet18", "v3plus", 1.0, (48, 32), 100),
    ("v3plus_mobilenet_v2", "deeplabv3_mobilenet_v2", "v3plus", 1.0, (64, 48), 100),
]
K, C, N, OS, ASPP = 3, 1, 2, 16, 8
RATES = {"v3": [2, 3], "v3plus": [2, 3, 4]}
# ASPP's image-pooling branch's 1 x 1, which the issue named.
WATCH = {"v3": "classifier.0.convs.3.1.weight", "v3plus": "decoder.aspp.0.convs.4.1.weight"}
# Gradients are compared relative to their tensor's largest |gradient| plus this fraction of the model's
# largest: a bias followed by training-mode batch norm has an exact gradient of 0, whose float32 value is
# rounding noise of the size of the gradients around it.
FLOOR = 1e-5


def model_for(arch, decoder, width, dtype):
    if decoder == "v3plus":
        model = smp.DeepLabV3Plus(
            encoder_name=arch.removeprefix("deeplabv3_"), encoder_weights=None, encoder_output_stride=OS,
            decoder_channels=ASPP, decoder_atrous_rates=tuple(RATES[decoder]), in_channels=C, classes=K)
    else:
        model = build(arch, K, C, OS, RATES[decoder], ASPP, True, width)
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    with torch.no_grad():
        for key, tensor in model.state_dict().items():
            tensor.copy_(torch.from_numpy(deterministic_value(key, tuple(tensor.shape))))
    return model.to(dtype).train()


def directions(dtype, size):
    shape = (N, K) + size
    count = int(np.prod(shape))
    return (torch.from_numpy(uniform(count, 777).astype(np.float32).reshape(shape)).to(dtype),
            torch.from_numpy(uniform(count, 778).astype(np.float32).reshape(shape)).to(dtype))


def loss(model, x, r, r_aux):
    result = model(x)
    if isinstance(result, torch.Tensor):  # smp: no auxiliary head
        return (result * r).sum()
    return (result["out"] * r).sum() + (result["aux"] * r_aux).sum()


def gradients(arch, decoder, width, size, dtype, channels_last=False):
    model = model_for(arch, decoder, width, dtype)
    x = torch.from_numpy(deterministic_input((N, C) + size)).to(dtype)
    if channels_last:
        model, x = model.to(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last)
    r, r_aux = directions(dtype, size)
    loss(model, x, r, r_aux).backward()
    return model, x, r, r_aux, {k: p.grad.detach().to(torch.float64).reshape(-1).numpy()
                                for k, p in model.named_parameters()}


def central_difference(model, x, r, r_aux, name, index, step=1e-3):
    """(L(w + h) − L(w − h)) / 2h for one element, as the Swift check takes it (fresh batch statistics each time)."""
    parameter = dict(model.named_parameters())[name]
    flat = parameter.data.view(-1)
    original = flat[index].item()
    values = []
    with torch.no_grad():
        for sign in (1, -1):
            flat[index] = original + sign * step
            values.append(loss(model, x, r, r_aux).item())
        flat[index] = original
    return (values[0] - values[1]) / (2 * step)


def checked_indices(g):
    if g.size <= 1024:
        return np.arange(g.size, dtype=np.int64)
    spaced = (np.arange(1024, dtype=np.int64) * g.size) // 1024
    largest = np.argsort(-np.abs(g), kind="stable")[:16]
    return np.unique(np.concatenate([spaced, largest]))


def main():
    torch.manual_seed(0)
    torch.set_num_threads(2)
    with h5py.File(OUT, "w") as f:
        f.attrs["torch"] = str(torch.__version__)
        f.attrs["generator"] = "Datasets/goldens/gradient_goldens.py"
        f.attrs["segmentation_models_pytorch"] = str(smp.__version__)
        f.attrs["loss_salts"] = [777, 778]
        for name, arch, decoder, width, size, index in CASES:
            m64, x64, r64, ra64, g64 = gradients(arch, decoder, width, size, torch.float64)
            m32, x32, r32, ra32, g32 = gradients(arch, decoder, width, size, torch.float32)
            variants = [g32, gradients(arch, decoder, width, size, torch.float32, channels_last=True)[-1]]
            with torch.backends.mkldnn.flags(enabled=False):
                variants.append(gradients(arch, decoder, width, size, torch.float32)[-1])
            group = f.create_group(name)
            config = {"arch": arch, "decoder": decoder, "numClasses": K, "inputChannels": C, "outputStride": OS,
                      "atrousRates": RATES[decoder], "asppChannels": ASPP, "aux": decoder == "v3",
                      "widthMultiplier": width, "seed": 0}
            group.attrs["configuration"] = json.dumps(config)
            group.attrs["input_shape"] = [N, C, *size]
            worst = (0.0, "")
            floor = FLOOR * max(float(np.abs(g).max()) for g in g64.values())
            group.attrs["floor"] = floor
            for key, g in g64.items():
                idx = checked_indices(g)
                p = group.create_group(key)
                p.attrs["max_abs"] = float(np.abs(g).max())
                p.create_dataset("indices", data=idx)
                p.create_dataset("float64", data=g[idx])
                spread = max(float(np.abs(v[key] - g).max()) for v in variants)
                p.attrs["float32_deviation"] = spread
                worst = max(worst, (spread / (float(np.abs(g).max()) + floor), key))
            print(f"{name}: {len(g64)} parameters; PyTorch float32 vs float64: largest |Δ| / scale "
                  f"{worst[0]:.3g} ({worst[1]})")
            watch = WATCH[decoder]
            fd32 = central_difference(m32, x32, r32, ra32, watch, index)
            fd64 = central_difference(m64, x64, r64, ra64, watch, index)
            print(f"  {watch}[{index}]: autograd float64 {g64[watch][index]:.6g}, float32 {g32[watch][index]:.6g}; "
                  f"central difference (h = 1e-3) float64 {fd64:.6g}, float32 {fd32:.6g}")
    print(f"torch {torch.__version__}; wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
