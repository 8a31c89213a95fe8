"""A training step of the bundled models' configuration (issue #37): SliceLab's `train` against PyTorch on the same
network, batch, crop and threads, in the same run.

The configuration is the one `BundledModels.md` trains `mni-brain` with: DeepLabV3+ on MobileNetV2 (output stride
16, ASPP and decoder 64 channels), 1 input channel, 3 classes, batch 4 of 128 x 128 crops upscaled x 2 (input scale
2: the network sees 256 x 256), Dice + cross-entropy, AdamW, 2 threads.

- SliceLab: `slicelab train` (release build) on a generated labeled set for BENCH_STEPS steps without validation, its
  mean step time read from its last progress line (steps/s); augmentation and data loading run on its background
  thread, as in every training run.
- PyTorch: segmentation-models-pytorch's `DeepLabV3Plus` (the layout SliceLab's DeepLabV3+ matches parameter for
  parameter, `TorchvisionParityTests` and the smp goldens), channels-last, the same input upscale (bilinear, half
  pixel) and the logits resized to the crop with aligned corners as SliceLab does, a soft Dice + cross-entropy loss,
  torch.optim.AdamW, on fixed tensors (no data loading, no augmentation); the mean of steps 2..BENCH_STEPS.

The two alternate BENCH_ROUNDS times (default 3) and the medians are compared: the ratio is SliceLab's step over
PyTorch's (issue #37's goal: at most 0.8). PyTorch and smp are not in `.venv` (`make bench` skips this then and
says so); BENCH_TORCH_PYTHON names an interpreter that has them, e.g. the goldens' venv built from
Datasets/goldens/requirements-deeplabv3plus.txt:

    BENCH_TORCH_PYTHON=/work/goldens-venv/bin/python .venv/bin/python Benchmarks/bench_training_bundled.py
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_deeplab_int8 import onednn_isa  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
STEPS = int(os.environ.get("BENCH_STEPS", "12"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
TORCH_PYTHON = os.environ.get("BENCH_TORCH_PYTHON", sys.executable)
BATCH, CROP, CLASSES, SCALE = 4, 128, 3, 2

TORCH_STEP = r'''
import resource, sys, time, torch, torch.nn.functional as F
import segmentation_models_pytorch as smp
batch, crop, classes, scale, steps = (int(v) for v in sys.argv[1:6])
torch.set_num_threads(2)
torch.manual_seed(0)
# upsampling=1: the head's logits at stride 4 of the upscaled input, resized to the crop below, as SliceLab does.
model = smp.DeepLabV3Plus(encoder_name="mobilenet_v2", encoder_weights=None, encoder_output_stride=16,
                          decoder_channels=64, in_channels=1, classes=classes, upsampling=1)
model = model.to(memory_format=torch.channels_last).train()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.rand(batch, 1, crop, crop)
y = torch.randint(0, classes, (batch, crop, crop))
onehot = F.one_hot(y, classes).permute(0, 3, 1, 2).float()

def loss_of(logits):
    p = logits.softmax(1)
    dice = 1 - (2 * (p * onehot).sum((2, 3)) + 1e-5) / (p.sum((2, 3)) + onehot.sum((2, 3)) + 1e-5)
    return F.cross_entropy(logits, y) + dice.mean()

times = []
for step in range(steps):
    start = time.perf_counter()
    optimizer.zero_grad()
    upscaled = F.interpolate(x, scale_factor=scale, mode="bilinear", align_corners=False)
    logits = model(upscaled.contiguous(memory_format=torch.channels_last))
    loss_of(F.interpolate(logits, size=(crop, crop), mode="bilinear", align_corners=True)).backward()
    optimizer.step()
    times.append(time.perf_counter() - start)
print(json.dumps({"ms": sum(times[1:]) / len(times[1:]) * 1000,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "torch": torch.__version__, "smp": smp.__version__}))
'''.replace("import resource,", "import json, resource,")


def write_set(folder, count, size):
    """`count` 1-channel `size`² images with labels of CLASSES classes (random; only the speed means something)."""
    import h5py
    import numpy as np
    rng = np.random.default_rng(0)
    for sub in ("images", "labels"):
        (folder / sub).mkdir(parents=True)
    names = [f"c{i}" for i in range(count)]
    for name in names:
        with h5py.File(folder / "images" / f"{name}.h5", "w") as f:
            f["image"] = rng.random((size, size), dtype=np.float32)
        with h5py.File(folder / "labels" / f"{name}.h5", "w") as f:
            f["labels"] = rng.integers(0, CLASSES, (size, size), dtype=np.uint8)
    (folder / "dataset.json").write_text(json.dumps({
        "name": "bench", "classes": ["a", "b", "c"], "modality": "MR", "splits": {"train": names},
        "preprocessing": {"normalize": "zscore"}}))


def slicelab_step(binary, folder, work):
    run = subprocess.run(["/usr/bin/time", "-v", str(binary), "train", str(folder),
                          "--arch", "deeplabv3_mobilenet_v2", "--decoder", "v3plus", "--num-classes", str(CLASSES),
                          "--output-stride", "16", "--aspp-channels", "64", "--input-scale", str(SCALE),
                          "--steps", str(STEPS), "--batch", str(BATCH), "--crop", str(CROP),
                          "--val-every", str(STEPS + 1), "--seed", "1", "--threads", "2",
                          "--out", str(work / "m.h5")],
                         capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "2"})
    if run.returncode != 0:
        raise SystemExit(f"slicelab train failed: {run.stderr[-2000:]}")
    rate = float([line for line in run.stderr.splitlines() if "steps/s" in line][-1].split("steps/s")[0].split()[-1])
    rss = next(float(line.split()[-1]) / 1024 for line in run.stderr.splitlines() if "Maximum resident" in line)
    return 1000 / rate, rss


def torch_step():
    run = subprocess.run([TORCH_PYTHON, "-c", TORCH_STEP, str(BATCH), str(CROP), str(CLASSES), str(SCALE),
                          str(STEPS)], capture_output=True, text=True)
    if run.returncode != 0:
        return None, (run.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(run.stdout.strip().splitlines()[-1]), None


def main():
    probe = subprocess.run([TORCH_PYTHON, "-c", "import torch, segmentation_models_pytorch"], capture_output=True)
    if probe.returncode != 0:
        print("bench_training_bundled: skipped, PyTorch or segmentation-models-pytorch missing from "
              f"{TORCH_PYTHON}; set BENCH_TORCH_PYTHON (see the script's note)")
        return
    binary = pathlib.Path(os.environ.get("SLICELAB_BINARY", ROOT / ".build/release/slicelab"))
    if not binary.exists():
        raise SystemExit("bench_training_bundled: build first: swift build -c release")
    isa = onednn_isa(binary)
    runs = []
    with tempfile.TemporaryDirectory() as folder:
        work = pathlib.Path(folder)
        write_set(work / "set", 2 * BATCH, 160)
        for round_ in range(ROUNDS):
            load = os.getloadavg()[0]
            ours = slicelab_step(binary, work / "set", work)
            theirs, error = torch_step()
            if error:
                raise SystemExit(f"bench_training_bundled: PyTorch failed: {error}")
            runs.append((*ours, theirs["ms"], theirs["rss_mb"]))
            print(f"  round {round_ + 1} (1-minute load {load:.2f}): SliceLab {ours[0]:.1f} ms ({ours[1]:.0f} MB), "
                  f"PyTorch {theirs['ms']:.1f} ms ({theirs['rss_mb']:.0f} MB)", flush=True)
    ours_ms, ours_rss, theirs_ms, theirs_rss = (sorted(column)[len(column) // 2] for column in zip(*runs))
    ratios = [r[0] / r[2] for r in runs]
    print(f"training step, bundled configuration (DeepLabV3+ MobileNetV2 OS 16, {BATCH} x 1 x {CROP}^2 at input "
          f"scale {SCALE}; torch {theirs['torch']}, smp {theirs['smp']}, channels-last; 2 threads; oneDNN ISA {isa}; "
          f"median of {ROUNDS} alternated rounds, each the mean of steps 2..{STEPS}): SliceLab {ours_ms:.1f} ms "
          f"({ours_rss:.0f} MB), PyTorch {theirs_ms:.1f} ms ({theirs_rss:.0f} MB), ratio {sorted(ratios)[len(ratios) // 2]:.2f} "
          f"(rounds {', '.join(f'{r:.2f}' for r in ratios)})")


if __name__ == "__main__":
    main()
