"""Training benchmark: SliceLab's training numerics against PyTorch/MONAI/torchvision, same sizes, same run.

1. Dice + cross-entropy loss and its gradient on logits 8 x 4 x 256 x 256: SliceLab DiceCELoss.evaluate vs MONAI
   DiceCELoss(softmax=True, to_onehot_y=True) forward + backward.
2. One optimizer step over the parameter shapes of torchvision's deeplabv3_resnet50 (4 classes): SliceLab AdamW and
   SGD (momentum 0.9, weight decay 1e-4) vs torch.optim.AdamW / SGD (default implementation on CPU).
3. Augmenting a batch of 8 gray 512 x 512 samples with labels to 256 x 256 crops (flip, rotation, zoom, crop,
   brightness/contrast, noise): SliceLab Augmenter vs torchvision.transforms.v2 on image + Mask.

The whole training step (forward, backward, update of deeplabv3_resnet50, batch 4 x 3 x 256 x 256) is the issue's
target; it needs the engine's backward passes, which are not in this build, so it is reported as not available.
SliceLab is timed by Benchmarks/training_driver (compiled here with `swiftc -O -wmo`): the loss spreads the batch's
images over the cores, the optimizers and the augmenter run on one thread; the peers with torch.set_num_threads(2). Median of REPEATS runs each. Needs torch, torchvision, monai: run with the goldens venv,
    /work/goldens-venv/bin/python Benchmarks/bench_training.py
(`make bench` runs it with .venv; without the peers it says so and exits 0). BENCH_QUICK=1 for smaller sizes.
"""
import json
import os
import pathlib
import shutil
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


def build_driver(workdir):
    snapshot = pathlib.Path(workdir) / "src"
    snapshot.mkdir()
    sources = [p for p in (ROOT / "Sources/DeepLab/Training").glob("*.swift") if p.name != "TrainingCheckpoint.swift"]
    for path in [*sources, ROOT / "Sources/DeepLab/SegmentationNetwork.swift",
                 ROOT / "Benchmarks/training_driver/main.swift"]:
        shutil.copy(path, snapshot / path.name)
    binary = pathlib.Path(workdir) / "training_driver"
    files = sorted(str(p) for p in snapshot.glob("*.swift") if p.name != "main.swift") + [str(snapshot / "main.swift")]
    subprocess.run(["swiftc", "-O", "-wmo", *files, "-o", str(binary)], check=True)
    return binary


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


def main():
    model = torchvision.models.segmentation.deeplabv3_resnet50(weights=None, weights_backbone=None, num_classes=4,
                                                               aux_loss=False)
    shapes = [list(p.shape) for p in model.parameters()]
    count = sum(p.numel() for p in model.parameters())
    with tempfile.TemporaryDirectory() as workdir:
        driver = build_driver(workdir)
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
              f"ratio {ours[key] / theirs[key]:.2f}x")
    print("full training step (deeplabv3_resnet50, batch 4 x 3 x 256^2): not available - the engine's backward passes "
          "are not in this build")


if __name__ == "__main__":
    main()
