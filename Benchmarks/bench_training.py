"""Training benchmark: SliceLab's training numerics against PyTorch/MONAI/torchvision, same sizes, same run.

1. Dice + cross-entropy loss and its gradient on logits 8 x 4 x 256 x 256: SliceLab DiceCELoss.evaluate vs MONAI
   DiceCELoss(softmax=True, to_onehot_y=True) forward + backward.
2. One optimizer step over the parameter shapes of torchvision's deeplabv3_resnet50 (4 classes): SliceLab AdamW and
   SGD (momentum 0.9, weight decay 1e-4) vs torch.optim.AdamW / SGD (default implementation on CPU).
3. Augmenting a batch of 8 gray 512 x 512 samples with labels to 256 x 256 crops (flip, rotation, zoom, crop,
   brightness/contrast, noise): SliceLab Augmenter vs torchvision.transforms.v2 on image + Mask.

4. The whole training step, the issue's target: forward, Dice+CE loss, backward and AdamW update of
   deeplabv3_resnet50 (4 classes, batch 4 x 3 x 256 x 256), and of deeplabv3_resnet18 (batch 8 x 1 x 128 x 128).
   SliceLab: `slicelab train` (release build) on a synthetic labeled set for STEPS steps without validation, its
   mean step time over steps 2..STEPS read from its progress line (steps/s); data loading runs on its background
   thread. PyTorch: torchvision's model in train mode, MONAI DiceCELoss, torch.optim.AdamW, mean of steps 2..STEPS.
   Peak RSS of each (SliceLab from /usr/bin/time, PyTorch from resource.getrusage in a subprocess). The two run
   alternately BENCH_FULL_REPEATS times (default 3) and the medians are compared, so a busy machine slows both.
SliceLab is timed by Benchmarks/training_driver (built here with `swift build -c release` as a package linking the
DeepLabTraining product, so -O as in the product): the loss spreads the batch's
images over OpenMP's threads, the optimizers split large tensors over OpenMP's threads, the augmenter runs on one thread; the peers with torch.set_num_threads(2). Median of REPEATS runs each. Needs torch, torchvision, monai: run with the goldens venv,
    /work/goldens-venv/bin/python Benchmarks/bench_training.py
(`make bench` runs it with .venv; without the peers it says so and exits 0). BENCH_QUICK=1 for smaller sizes;
BENCH_FULL_REPEATS and BENCH_FULL_ARCHS (comma-separated) choose part 4's repeats and models.
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import warnings

warnings.filterwarnings("ignore")
ROOT = pathlib.Path(__file__).resolve().parents[1]
QUICK = os.environ.get("BENCH_QUICK") == "1"
REPEATS = 3 if QUICK else 7

try:
    import torch
    import torchvision
    import monai
    from monai.losses import DiceCELoss
    from torchvision import tv_tensors
    from torchvision.transforms import v2
except ImportError as error:
    print(f"bench_training: skipped, peer missing ({error}); run with /work/goldens-venv/bin/python")
    sys.exit(0)

SPEC = {"batch": 2 if QUICK else 8, "classes": 4, "size": 128 if QUICK else 256, "repeats": REPEATS,
        "augmentBatch": 8, "augmentSource": 512, "augmentCrop": 256}


def build_driver():
    """Builds Benchmarks/training_driver, a package linking SliceLab's DeepLabTraining product; its path."""
    package = ROOT / "Benchmarks/training_driver"
    command = ["swift", "build", "-c", "release", "--package-path", str(package)]
    subprocess.run(command, check=True)
    bin_path = subprocess.run([*command, "--show-bin-path"], check=True, capture_output=True, text=True)
    return pathlib.Path(bin_path.stdout.strip()) / "training_driver"


def median(fn, repeats=REPEATS):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return sorted(times)[len(times) // 2]


def peers(shapes):
    torch.set_num_threads(2)
    g = torch.Generator().manual_seed(1)
    b, k, s = SPEC["batch"], SPEC["classes"], SPEC["size"]
    logits = torch.randn(b, k, s, s, generator=g)
    labels = torch.randint(0, k, (b, 1, s, s), generator=g)
    loss_fn = DiceCELoss(softmax=True, to_onehot_y=True)

    def loss_step():
        z = logits.clone().requires_grad_(True)
        loss_fn(z, labels).backward()

    results = {"dicece_ms": median(loss_step)}
    for name, make in (("adamw_ms", lambda p: torch.optim.AdamW(p, lr=1e-3)),
                       ("sgd_ms", lambda p: torch.optim.SGD(p, lr=1e-2, momentum=0.9, weight_decay=1e-4))):
        params = [torch.full(shape, 0.01, requires_grad=True) for shape in shapes]
        for p in params:
            p.grad = torch.full_like(p, 0.001)
        optimizer = make(params)
        optimizer.step()
        results[name] = median(optimizer.step)
    source = tv_tensors.Image(torch.rand(1, SPEC["augmentSource"], SPEC["augmentSource"], generator=g))
    mask = tv_tensors.Mask((torch.arange(SPEC["augmentSource"] ** 2) % 3).reshape(SPEC["augmentSource"], -1))
    transform = v2.Compose([v2.RandomHorizontalFlip(), v2.RandomAffine(degrees=15, scale=(0.85, 1.15)),
                            v2.RandomCrop(SPEC["augmentCrop"], pad_if_needed=True),
                            v2.ColorJitter(brightness=0.1, contrast=0.1), v2.GaussianNoise(sigma=0.02, clip=False)])
    results["augment_ms"] = median(lambda: [transform(source, mask) for _ in range(SPEC["augmentBatch"])])
    return results


STEPS = 4 if QUICK else 8
FULL_REPEATS = int(os.environ.get("BENCH_FULL_REPEATS", "1" if QUICK else "3"))
FULL_STEP = ([("deeplabv3_resnet18", 2, 1, 64)] if QUICK
             else [("deeplabv3_resnet50", 4, 3, 256), ("deeplabv3_resnet18", 8, 1, 128)])
if os.environ.get("BENCH_FULL_ARCHS"):  # e.g. BENCH_FULL_ARCHS=deeplabv3_resnet50 times only that model's step
    FULL_STEP = [case for case in FULL_STEP if case[0] in os.environ["BENCH_FULL_ARCHS"].split(",")]

TORCH_STEP = r'''
import resource, sys, time, torch, torchvision
from monai.losses import DiceCELoss
arch, batch, channels, size, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
torch.set_num_threads(2)
torch.manual_seed(0)
if arch == "deeplabv3_resnet50":
    model = torchvision.models.segmentation.deeplabv3_resnet50(weights=None, weights_backbone=None, num_classes=4)
else:  # torchvision has no resnet18 factory: the same head on a dilated resnet18 trunk, as the parity fixtures build it
    from torchvision.models.segmentation.deeplabv3 import DeepLabHead, DeepLabV3
    from torchvision.models._utils import IntermediateLayerGetter
    trunk = torchvision.models.resnet18(weights=None)
    trunk.conv1 = torch.nn.Conv2d(channels, 64, 7, 2, 3, bias=False)
    for layer, dilation in ((trunk.layer3, 2), (trunk.layer4, 4)):
        for block in layer:
            for conv in (block.conv1, block.conv2):
                if conv.stride == (2, 2):
                    conv.stride = (1, 1)
                conv.dilation, conv.padding = (dilation, dilation), (dilation, dilation)
            if block.downsample is not None:
                block.downsample[0].stride = (1, 1)
    model = DeepLabV3(IntermediateLayerGetter(trunk, {"layer4": "out"}), DeepLabHead(512, 4), None)
if arch == "deeplabv3_resnet50" and channels != 3:
    model.backbone.conv1 = torch.nn.Conv2d(channels, 64, 7, 2, 3, bias=False)
model.train()
loss_fn = DiceCELoss(softmax=True, to_onehot_y=True)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.rand(batch, channels, size, size)
y = torch.randint(0, 4, (batch, 1, size, size))
times = []
for step in range(steps):
    start = time.perf_counter()
    optimizer.zero_grad()
    loss_fn(model(x)["out"], y).backward()
    optimizer.step()
    times.append(time.perf_counter() - start)
print(sum(times[1:]) / len(times[1:]) * 1000, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
'''


def write_set(folder, count, channels, size):
    import h5py
    import numpy as np
    rng = np.random.default_rng(0)
    for sub in ("images", "labels"):
        (folder / sub).mkdir(parents=True)
    names = [f"c{i}" for i in range(count)]
    for name in names:
        shape = (size, size, 3) if channels == 3 else (size, size)
        with h5py.File(folder / "images" / f"{name}.h5", "w") as f:
            f["image"] = rng.random(shape, dtype=np.float32)
        with h5py.File(folder / "labels" / f"{name}.h5", "w") as f:
            f["labels"] = rng.integers(0, 4, (size, size), dtype=np.uint8)
    (folder / "dataset.json").write_text(json.dumps({
        "name": "bench", "classes": ["a", "b", "c", "d"], "modality": "OT", "splits": {"train": names},
        "preprocessing": {"normalize": "none"}}))


def slicelab_step(arch, batch, channels, size):
    binary = pathlib.Path(os.environ.get("SLICELAB_BINARY", ROOT / ".build/release/slicelab"))
    if not binary.exists():
        subprocess.run(["swift", "build", "-c", "release", "--product", "slicelab"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory() as workdir:
        folder = pathlib.Path(workdir) / "set"
        write_set(folder, batch * 2, channels, size)
        run = subprocess.run(["/usr/bin/time", "-v", str(binary), "train", str(folder), "--arch", arch,
                              "--num-classes", "4", "--in-channels", str(channels), "--steps", str(STEPS),
                              "--batch", str(batch), "--crop", str(size), "--val-every", str(STEPS + 1),
                              "--threads", "2", "--out", str(pathlib.Path(workdir) / "m.h5")],
                             capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "2"})
        if run.returncode != 0:
            raise SystemExit(f"slicelab train failed: {run.stderr[-2000:]}")
        lines = [line for line in run.stderr.splitlines() if "steps/s" in line]
        rate = float(lines[-1].split("steps/s")[0].split()[-1])
        rss = next(float(line.split()[-1]) / 1024 for line in run.stderr.splitlines() if "Maximum resident" in line)
        return 1000 / rate, rss


def torch_step(arch, batch, channels, size):
    out = subprocess.run([sys.executable, "-c", TORCH_STEP, arch, str(batch), str(channels), str(size), str(STEPS)],
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1])


def main():
    model = torchvision.models.segmentation.deeplabv3_resnet50(weights=None, weights_backbone=None, num_classes=4,
                                                               aux_loss=False)
    shapes = [list(p.shape) for p in model.parameters()]
    count = sum(p.numel() for p in model.parameters())
    with tempfile.TemporaryDirectory() as workdir:
        driver = build_driver()
        spec_path = pathlib.Path(workdir) / "spec.json"
        spec_path.write_text(json.dumps({**SPEC, "parameterShapes": shapes}))
        ours = json.loads(subprocess.run([str(driver), str(spec_path)], check=True, capture_output=True,
                                         text=True).stdout)
    theirs = peers(shapes)
    b, k, s = SPEC["batch"], SPEC["classes"], SPEC["size"]
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, MONAI {monai.__version__}; "
          f"median of {REPEATS}; peers on 2 threads")
    rows = [("DiceCE loss + gradient, logits %dx%dx%dx%d" % (b, k, s, s), "dicece_ms", "MONAI DiceCELoss"),
            ("AdamW step, deeplabv3_resnet50 (%.1fM parameters)" % (count / 1e6), "adamw_ms", "torch.optim.AdamW"),
            ("SGD momentum step, same parameters", "sgd_ms", "torch.optim.SGD"),
            ("augment 8 x 512^2 -> 256^2 crops", "augment_ms", "torchvision v2")]
    for label, key, peer in rows:
        print(f"{label:55s} SliceLab {ours[key]:9.2f} ms  {peer} {theirs[key]:9.2f} ms  "
              f"ratio {ours[key] / theirs[key]:.2f}x", flush=True)
    for arch, batch, channels, size in FULL_STEP:
        runs = []  # SliceLab and PyTorch alternate, so load on the shared machine falls on both alike
        for _ in range(FULL_REPEATS):
            runs.append((*slicelab_step(arch, batch, channels, size), *torch_step(arch, batch, channels, size)))
            print(f"  run {len(runs)}: {arch} SliceLab {runs[-1][0]:.1f} ms ({runs[-1][1]:.0f} MB), "
                  f"PyTorch {runs[-1][2]:.1f} ms ({runs[-1][3]:.0f} MB)", flush=True)
        ours_ms, ours_rss, theirs_ms, theirs_rss = (sorted(column)[len(column) // 2] for column in zip(*runs))
        print(f"training step {arch} {batch}x{channels}x{size}^2 (median of {FULL_REPEATS} interleaved runs, "
              f"each the mean of steps 2..{STEPS}): SliceLab {ours_ms:9.1f} ms ({ours_rss:.0f} MB)  "
              f"PyTorch {theirs_ms:9.1f} ms ({theirs_rss:.0f} MB)  time ratio {ours_ms / theirs_ms:.2f}x  "
              f"RSS ratio {ours_rss / theirs_rss:.2f}x", flush=True)


if __name__ == "__main__":
    main()
