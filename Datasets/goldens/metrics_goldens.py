"""Regenerates Tests/MetricsTests/Fixtures/metrics_goldens.json: label maps (2-D and 3-D, anisotropic spacing,
touching borders, single voxels, holes, empty reference, empty prediction, both empty) with the metrics MONAI and
medpy compute on them, plus scipy.stats.wilcoxon and numpy statistics on seeded samples.

Run with the shared goldens venv:  /work/goldens-venv/bin/python Datasets/goldens/metrics_goldens.py
Peers and versions are recorded in the output (`versions`). Values are strings (repr of float64, "nan", "inf").
"""
import json
import pathlib
import warnings
from importlib.metadata import version

import numpy as np
import scipy
import scipy.ndimage as ndi
import scipy.stats
import torch
import monai
from monai.metrics import (compute_average_surface_distance, compute_dice, compute_hausdorff_distance,
                           compute_iou, compute_surface_dice)
from monai.metrics.confusion_matrix import get_confusion_matrix
from medpy.metric import binary as medpy_binary

warnings.filterwarnings("ignore")
SEED = 20261129
rng = np.random.default_rng(SEED)
ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "Tests/MetricsTests/Fixtures/metrics_goldens.json"


def s(x):
    return repr(float(x))


# MARK: - masks

def ellipsoid(shape, centre, radii):
    grids = np.meshgrid(*[np.arange(n) for n in shape], indexing="ij")
    return sum(((g - c) / r) ** 2 for g, c, r in zip(grids, centre, radii)) <= 1


def blobs(shape, threshold, sigma):
    noise = ndi.gaussian_filter(rng.standard_normal(shape), sigma)
    return noise > threshold * noise.std()


def perturb(mask, flips):
    out = mask.copy()
    idx = rng.integers(0, mask.size, flips)
    out.flat[idx] = ~out.flat[idx]
    return out


def labels_from(masks, shape):
    out = np.zeros(shape, np.uint8)
    for value, m in enumerate(masks, start=1):
        out[m] = value
    return out


def cases():
    c = []
    # 2-D, three classes: a disk and a rectangle with a hole, prediction shifted and noisy.
    shape = (24, 30)
    disk = ellipsoid(shape, (10, 9), (6, 5))
    rect = np.zeros(shape, bool); rect[4:20, 17:28] = True; rect[9:14, 21:24] = False
    ref = labels_from([disk, rect], shape)
    pred = labels_from([perturb(np.roll(disk, 2, axis=1), 12), perturb(np.roll(rect, -1, axis=0), 10)], shape)
    c.append(("2d_disk_and_holed_rectangle", ref, pred, (0.7, 1.3), 3, 1.0))
    # 2-D touching borders on all sides, isotropic non-unit spacing.
    ref = np.zeros(shape, np.uint8); ref[0:10, 0:30] = 1; ref[15:24, 20:30] = 2
    pred = np.zeros(shape, np.uint8); pred[0:12, 0:27] = 1; pred[14:24, 22:30] = 2
    c.append(("2d_touching_borders", ref, pred, (0.5, 0.5), 3, 0.75))
    # 2-D single pixels.
    ref = np.zeros(shape, np.uint8); ref[5, 7] = 1
    pred = np.zeros(shape, np.uint8); pred[9, 4] = 1
    c.append(("2d_single_pixels", ref, pred, (1.2, 0.9), 2, 2.0))
    # 2-D empty reference (class 1), empty prediction (class 2), both empty (class 3).
    ref = np.zeros(shape, np.uint8); ref[3:9, 3:12] = 2
    pred = np.zeros(shape, np.uint8); pred[12:20, 5:15] = 1
    c.append(("2d_empty_cases", ref, pred, (0.8, 1.1), 4, 1.0))
    # 2-D random blobs, two classes.
    b1, b2 = blobs(shape, 0.8, 2.0), blobs(shape, 0.8, 2.0)
    c.append(("2d_random_blobs", labels_from([b1], shape), labels_from([perturb(b1, 40) & ~b2 | (b2 & b1)], shape),
              (0.6, 0.9), 2, 0.5))
    # 3-D ellipsoids with a hollow core, anisotropic (slice, row, column) spacing.
    shape3 = (10, 18, 20)
    shell = ellipsoid(shape3, (5, 9, 10), (4, 7, 8)) & ~ellipsoid(shape3, (5, 9, 10), (2, 3, 4))
    small = ellipsoid(shape3, (3, 4, 15), (2, 2.5, 3))
    ref = labels_from([shell, small], shape3)
    pred = labels_from([perturb(ellipsoid(shape3, (5, 10, 9), (4, 6, 8)) & ~ellipsoid(shape3, (5, 9, 10), (2, 3, 3)), 30),
                        np.roll(small, 1, axis=0)], shape3)
    c.append(("3d_hollow_ellipsoid", ref, pred, (2.5, 0.8, 0.8), 3, 1.5))
    # 3-D touching borders, single voxels and empties.
    ref = np.zeros(shape3, np.uint8); ref[:, 0:6, :] = 1; ref[4, 12, 10] = 2
    pred = np.zeros(shape3, np.uint8); pred[0:8, 0:7, 0:19] = 1; pred[5, 11, 13] = 2; pred[8, 15, 3] = 3
    c.append(("3d_borders_single_voxels_empty", ref, pred, (1.0, 0.6, 0.9), 5, 1.0))
    # 3-D random blobs.
    shape4 = (8, 16, 14)
    b1 = blobs(shape4, 0.7, 1.5)
    c.append(("3d_random_blobs", labels_from([b1], shape4), labels_from([perturb(ndi.binary_dilation(b1), 60)], shape4),
              (2.0, 0.7, 0.75), 2, 1.2))
    return c


# MARK: - peers

def monai_class_metrics(ref, pred, k, spacing, tolerance):
    # Overlap metrics in float64 (MONAI computes in the input dtype); the distance functions cast to float32
    # themselves.
    onehot = lambda a: torch.from_numpy(np.stack([(a == i) for i in range(k)])[None].astype(np.float64))
    y, p = onehot(ref), onehot(pred)
    sp = list(spacing)
    out = {
        "dice": compute_dice(p, y, include_background=True, ignore_empty=True)[0],
        "iou": compute_iou(p, y, include_background=True, ignore_empty=True)[0],
        "hd": compute_hausdorff_distance(p, y, include_background=True, spacing=sp)[0],
        "hd95": compute_hausdorff_distance(p, y, include_background=True, percentile=95, spacing=sp)[0],
        "assd": compute_average_surface_distance(p, y, include_background=True, symmetric=True, spacing=sp)[0],
        "nsd": compute_surface_dice(p, y, [tolerance] * k, include_background=True, spacing=sp)[0],
    }
    # MONAI's confusion counts [tp, fp, tn, fn] are exact integers; its precision/sensitivity divide them in
    # float32, so the ratios are formed here in float64 with MONAI's rule (NaN for a zero denominator).
    confusion = get_confusion_matrix(p, y, include_background=True)[0].double()
    tp, fp, fn = confusion[:, 0], confusion[:, 1], confusion[:, 3]
    nan = torch.tensor(float("nan"), dtype=torch.float64)
    out["precision"] = torch.where(tp + fp > 0, tp / (tp + fp), nan)
    out["recall"] = torch.where(tp + fn > 0, tp / (tp + fn), nan)
    return {name: [s(v) for v in values.tolist()] for name, values in out.items()}


def medpy_class_metrics(ref, pred, k, spacing):
    # `hd95_max_float64`: MONAI's definition (max of the two directed 95th percentiles) computed in float64 from
    # medpy's surface distances with np.percentile, free of MONAI's float32 rounding.
    surface_distances = getattr(medpy_binary, "__surface_distances")
    out = {name: [] for name in ["dice", "iou", "precision", "recall", "hd", "hd95", "assd", "hd95_max_float64"]}
    for i in range(k):
        r, p = ref == i, pred == i
        if not r.any() or not p.any():  # medpy raises on empty masks
            for values in out.values():
                values.append(None)
            continue
        out["dice"].append(s(medpy_binary.dc(p, r)))
        out["iou"].append(s(medpy_binary.jc(p, r)))
        out["precision"].append(s(medpy_binary.precision(p, r)))
        out["recall"].append(s(medpy_binary.recall(p, r)))
        out["hd"].append(s(medpy_binary.hd(p, r, voxelspacing=spacing)))
        out["hd95"].append(s(medpy_binary.hd95(p, r, voxelspacing=spacing)))
        out["assd"].append(s(medpy_binary.assd(p, r, voxelspacing=spacing)))
        directed = [surface_distances(p, r, spacing), surface_distances(r, p, spacing)]
        out["hd95_max_float64"].append(s(max(np.percentile(d, 95) for d in directed)))
    return out


def statistics_goldens():
    samples = {
        "exact_n12": rng.normal(0.3, 1.0, 12),
        "exact_n30": rng.normal(-0.1, 1.0, 30),
        "exact_n50": rng.normal(0.05, 0.5, 50),
        "permutation_ties_n10": np.round(rng.normal(0.2, 1.0, 10), 1),
        "permutation_zeros_n9": np.r_[np.round(rng.normal(0.5, 1.0, 7), 2), 0.0, 0.0],
        "normal_ties_n40": np.round(rng.normal(0.2, 1.0, 40), 1),
        "normal_zeros_n25": np.r_[rng.normal(0.4, 1.0, 22), 0.0, 0.0, 0.0],
        "normal_n80": rng.normal(0.1, 1.0, 80),
        "all_positive_n6": np.abs(rng.normal(1.0, 0.3, 6)) + 0.01,
    }
    out = []
    for name, d in samples.items():
        res = scipy.stats.wilcoxon(d)
        out.append({"name": name, "differences": [s(x) for x in d], "statistic": s(res.statistic),
                    "pvalue": s(res.pvalue), "mean": s(np.mean(d)), "std_ddof1": s(np.std(d, ddof=1)),
                    "median": s(np.median(d)), "q25": s(np.percentile(d, 25)), "q75": s(np.percentile(d, 75)),
                    "p95": s(np.percentile(d, 95)), "p2_5": s(np.percentile(d, 2.5))})
    return out


def main():
    records = []
    for name, ref, pred, spacing, k, tolerance in cases():
        records.append({
            "name": name, "shape": list(ref.shape), "spacing": list(spacing), "class_count": k,
            "tolerance_mm": tolerance,
            "reference": "".join(str(v) for v in ref.ravel()), "prediction": "".join(str(v) for v in pred.ravel()),
            "monai": monai_class_metrics(ref, pred, k, spacing, tolerance),
            "medpy": medpy_class_metrics(ref, pred, k, spacing),
        })
    versions = {name: version(name) for name in ["monai", "medpy", "torch", "scipy", "numpy"]}
    result = {"generated_by": "Datasets/goldens/metrics_goldens.py", "seed": SEED, "versions": versions,
              "notes": "MONAI rounds surface distances to float32; medpy computes in float64.",
              "cases": records, "wilcoxon": statistics_goldens()}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes) with {versions}")


if __name__ == "__main__":
    main()
