"""Metrics benchmark: SliceLab's Metrics library against medpy and MONAI on the same masks, in the same run.

1. HD95 + ASSD on a pair of 256x256x256 masks with spacing (2.5, 0.8, 0.8) mm (slice, row, column), i.e. 0.8 x 0.8
   in-plane and 2.5 mm slices: SliceLab (one SurfaceDistances, then HD95 and ASSD) vs medpy (hd95 + assd) vs
   MONAI (compute_hausdorff_distance(percentile=95) + compute_average_surface_distance, CPU).
2. Dice and IoU over 1,000 slices of 512x512 with 4 classes, in batches of 50 slices: SliceLab (per-slice confusion
   matrices, then Dice and IoU per class) vs MONAI DiceMetric + MeanIoU on one-hot tensors (one-hot conversion
   timed separately). Peak memory stays near 3 GB (one batch of one-hot tensors).

SliceLab is timed by Benchmarks/metrics_driver (compiled here with `swiftc -O` from Sources/Metrics); the peers
with time.perf_counter around their calls. Best of REPEATS runs each (MONAI Dice/IoU once: it takes minutes). Needs numpy, scipy, torch, monai, medpy:
run with the goldens venv,  /work/goldens-venv/bin/python Benchmarks/bench_metrics.py  (`make bench` runs it with
.venv, which lacks torch: set SLICELAB_PEER_PYTHON=/work/goldens-venv/bin/python and it re-runs itself with that
interpreter). Set BENCH_QUICK=1 for smaller sizes.
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

import numpy as np

warnings.filterwarnings("ignore")
ROOT = pathlib.Path(__file__).resolve().parents[1]
QUICK = os.environ.get("BENCH_QUICK") == "1"
REPEATS = 1 if QUICK else 2
SEED = 20261129

try:
    import torch
    import monai
    from monai.metrics import (DiceMetric, MeanIoU, compute_average_surface_distance, compute_hausdorff_distance)
    from monai.networks.utils import one_hot
    from medpy.metric import binary as medpy_binary
    import medpy
    from importlib.metadata import version
except ImportError as error:  # the peers are not in this interpreter: use SLICELAB_PEER_PYTHON if given
    peer_python = os.environ.get("SLICELAB_PEER_PYTHON")
    if peer_python and os.path.realpath(peer_python) != os.path.realpath(sys.executable):
        sys.exit(subprocess.call([peer_python, __file__]))
    print(f"bench_metrics: skipped, peer missing ({error}); set SLICELAB_PEER_PYTHON to an interpreter with "
          "torch, monai, medpy and scipy (e.g. /work/goldens-venv/bin/python)")
    sys.exit(0)


def build_driver(workdir):
    binary = pathlib.Path(workdir) / "metrics_driver"
    # Compile a snapshot, so editing the sources meanwhile cannot break the build.
    snapshot = pathlib.Path(workdir) / "src"
    snapshot.mkdir()
    for path in [*(ROOT / "Sources/Metrics").glob("*.swift"), ROOT / "Benchmarks/metrics_driver/main.swift"]:
        shutil.copy(path, snapshot / path.name)
    sources = sorted(str(p) for p in snapshot.glob("*.swift") if p.name != "main.swift")
    main = snapshot / "main.swift"
    # The library's files plus the driver in one module; -O with whole-module optimisation as a release build.
    subprocess.run(["swiftc", "-O", "-wmo", *sources, str(main), "-o", str(binary)], check=True)
    return binary


def best(fn, repeats=REPEATS):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def ellipsoid(shape, centre, radii):
    z, y, x = np.ogrid[:shape[0], :shape[1], :shape[2]]
    return ((z - centre[0]) / radii[0]) ** 2 + ((y - centre[1]) / radii[1]) ** 2 + ((x - centre[2]) / radii[2]) ** 2 <= 1


def surface_benchmark(driver, workdir):
    n = 96 if QUICK else 256
    shape, spacing = (n, n, n), (2.5, 0.8, 0.8)
    rng = np.random.default_rng(SEED)
    ref = ellipsoid(shape, (n * 0.5, n * 0.5, n * 0.5), (n * 0.3, n * 0.38, n * 0.35))
    pred = ellipsoid(shape, (n * 0.52, n * 0.48, n * 0.5), (n * 0.29, n * 0.4, n * 0.33))
    flips = rng.integers(0, pred.size, pred.size // 2000)
    pred.flat[flips] = ~pred.flat[flips]
    ref_path, pred_path = pathlib.Path(workdir) / "ref.raw", pathlib.Path(workdir) / "pred.raw"
    ref.astype(np.uint8).tofile(ref_path)
    pred.astype(np.uint8).tofile(pred_path)
    out = subprocess.run([str(driver), "surface", str(ref_path), str(pred_path), *map(str, shape), *map(str, spacing),
                          str(REPEATS)], check=True, capture_output=True, text=True).stdout
    ours = json.loads(out)

    def run_medpy():
        return medpy_binary.hd95(pred, ref, voxelspacing=spacing), medpy_binary.assd(pred, ref, voxelspacing=spacing)

    p, y = torch.from_numpy(pred[None, None]), torch.from_numpy(ref[None, None])

    def run_monai():
        hd95 = compute_hausdorff_distance(p, y, include_background=True, percentile=95, spacing=list(spacing))
        assd = compute_average_surface_distance(p, y, include_background=True, symmetric=True, spacing=list(spacing))
        return float(hd95), float(assd)

    medpy_time, (medpy_hd95, medpy_assd) = best(run_medpy)
    monai_time, (monai_hd95, monai_assd) = best(run_monai)
    print(f"HD95+ASSD {shape} spacing {spacing}: SliceLab {ours['seconds']:.3f} s  medpy {medpy_time:.3f} s  "
          f"MONAI {monai_time:.3f} s")
    print(f"  ratio medpy/SliceLab {medpy_time / ours['seconds']:.1f}x   MONAI/SliceLab {monai_time / ours['seconds']:.1f}x")
    print(f"  values: SliceLab hd95 {ours['hd95']:.6f} assd {ours['assd']:.6f} | MONAI hd95 {monai_hd95:.6f} "
          f"assd {monai_assd:.6f} | medpy hd95(pooled) {medpy_hd95:.6f} assd {medpy_assd:.6f}")


def overlap_benchmark(driver, workdir):
    slices = 100 if QUICK else 1000
    rows = columns = 512
    classes, batch = 4, 50
    rng = np.random.default_rng(SEED + 1)
    # Smooth random label maps so classes form regions: quantised low-frequency noise, then 5% label noise.
    base = rng.standard_normal((slices, 32, 32)).astype(np.float32)
    base = np.repeat(np.repeat(base, 16, axis=1), 16, axis=2)
    ref = np.digitize(base, [-0.6, 0.2, 0.9]).astype(np.uint8)
    pred = ref.copy()
    noise = rng.random(pred.shape) < 0.05
    pred[noise] = rng.integers(0, classes, int(noise.sum())).astype(np.uint8)
    ref_path, pred_path = pathlib.Path(workdir) / "ref2d.raw", pathlib.Path(workdir) / "pred2d.raw"
    ref.tofile(ref_path)
    pred.tofile(pred_path)
    out = subprocess.run([str(driver), "overlap", str(ref_path), str(pred_path), str(slices), str(rows), str(columns),
                          str(classes), str(batch), str(REPEATS)], check=True, capture_output=True, text=True).stdout
    ours = json.loads(out)

    def run_monai():
        # Per batch: labels -> one-hot (timed apart), then DiceMetric and MeanIoU on the one-hot tensors.
        dice, iou = DiceMetric(include_background=True, reduction="none"), MeanIoU(include_background=True, reduction="none")
        conversion = metric = total = 0.0
        for start in range(0, slices, batch):
            t0 = time.perf_counter()
            p = one_hot(torch.from_numpy(pred[start:start + batch, None].astype(np.int64)), classes)
            y = one_hot(torch.from_numpy(ref[start:start + batch, None].astype(np.int64)), classes)
            t1 = time.perf_counter()
            d = dice(p, y)
            iou(p, y)
            metric += time.perf_counter() - t1
            conversion += t1 - t0
            total += float(torch.nansum(d))
        return metric, conversion, total

    without_hot, conversion, monai_sum = run_monai()  # once: minutes at full size
    with_hot = without_hot + conversion
    print(f"Dice+IoU {slices} slices {rows}x{columns}, {classes} classes: SliceLab {ours['seconds']:.3f} s  "
          f"MONAI {without_hot:.3f} s (one-hot given), {with_hot:.3f} s (with one_hot)")
    print(f"  ratio MONAI/SliceLab {without_hot / ours['seconds']:.1f}x (one-hot given), "
          f"{with_hot / ours['seconds']:.1f}x (with one_hot)")
    print(f"  sum of Dice: SliceLab {ours['dice_sum']:.6f}  MONAI {monai_sum:.6f}")


def main():
    torch.set_num_threads(os.cpu_count() or 1)
    print(f"peers: monai {version('monai')}, medpy {version('medpy')}, torch {torch.__version__} "
          f"({torch.get_num_threads()} threads), numpy {np.__version__}; seed {SEED}; best of {REPEATS}")
    with tempfile.TemporaryDirectory() as workdir:
        driver = build_driver(workdir)
        surface_benchmark(driver, workdir)
        overlap_benchmark(driver, workdir)


if __name__ == "__main__":
    main()
