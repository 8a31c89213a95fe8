"""Cross-validation, ensembles and test-time mirroring on `mni-brain-3d` (issue #36): trains the set's five folds
with a short schedule (`train --fold all`), then segments its held-out test cases with fold 0 alone, with the
five-fold ensemble, and with the ensemble and mirroring, and reports per configuration the forward passes a slice,
the seconds, the mean foreground Dice over the test cases, and the paired two-sided Wilcoxon p-value (scipy)
against fold 0 alone.

    .venv/bin/python Benchmarks/bench_crossval.py [--dataset Datasets/cache/mni-brain-3d] [--steps 150]
        [--cases 10] [--out Benchmarks/output/crossval] [--threads 2]

Cost on 2 cores (Intel Xeon with AMX, 2026-12-06): one fold of 150 steps trained in 8.1 minutes and scored its six
validation volumes in 51 s (about 9 s a volume a pass, tiled at the training crop), so the five folds take about
45 minutes and the ten test cases about 9 s × (1 + 5 + 10) passes each. `--cases` takes the first N test cases.

The set is built by `make datasets` (Datasets/build_mni_brain_3d.py). Every number printed is measured in this run;
the CPU and oneDNN's ISA are printed with them.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import h5py
import nibabel as nib
import numpy as np
from scipy.stats import wilcoxon

ROOT = Path(__file__).resolve().parents[1]
SLICELAB = os.environ.get("SLICELAB_BINARY", str(ROOT / ".build/release/slicelab"))


def run(arguments, **kwargs):
    print("$ slicelab " + " ".join(map(str, arguments)), flush=True)
    start = time.perf_counter()
    result = subprocess.run([SLICELAB, *map(str, arguments)], capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"slicelab {arguments[0]} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return time.perf_counter() - start, result


def foreground_dice(prediction, reference, classes):
    return float(np.mean([2 * np.sum((prediction == c) & (reference == c))
                          / max(1, np.sum(prediction == c) + np.sum(reference == c)) for c in range(1, classes)]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default=str(ROOT / "Datasets/cache/mni-brain-3d"))
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--out", default=str(ROOT / "Benchmarks/output/crossval"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cases", type=int, default=0, help="the first N test cases (0: all)")
    args = parser.parse_args()
    dataset, out = Path(args.dataset), Path(args.out)
    if not (dataset / "dataset.json").exists():
        print(f"bench_crossval: skipped, {dataset} is not built (make datasets builds it)")
        return
    out.mkdir(parents=True, exist_ok=True)
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    schedule = ["--arch", "deeplabv3_mobilenet_v2", "--num-classes", 3, "--steps", args.steps, "--batch", 4,
                "--crop", 64, "--output-stride", 8, "--aspp-channels", 64, "--input-scale", 2, "--lr", "1e-3",
                "--seed", 0, "--threads", args.threads]
    train_seconds, _ = run(["train", dataset, "--fold", "all", "--out", str(out) + "/", *schedule])
    cases = sorted(p.name[:-len("_0000.nii.gz")] for p in (dataset / "imagesTs").glob("*_0000.nii.gz"))
    cases = cases[:args.cases] if args.cases > 0 else cases
    configurations = [("fold 0", [out / "fold_0/model.h5"], "none"),
                      ("5-fold ensemble", [out], "none"),
                      ("5-fold ensemble + mirror", [out], "mirror")]
    rows, isa = [], ""
    for name, models, tta in configurations:
        folder = out / name.replace(" ", "_").replace("+", "plus")
        folder.mkdir(exist_ok=True)
        seconds, dice, passes = 0.0, [], ""
        for case in cases:
            prediction = folder / f"{case}.h5"
            model_arguments = [a for m in models for a in ("--model", m)]
            elapsed, result = run(["segment", dataset / f"imagesTs/{case}_0000.nii.gz", *model_arguments, "--tta", tta,
                                   "--out", prediction, "--threads", args.threads, "--timings"])
            seconds += elapsed
            passes = next((line.split("= ")[1].split(" ")[0] for line in result.stderr.splitlines()
                           if "forward passes a slice" in line), "1")
            isa = isa or next((line for line in result.stderr.splitlines() if "ISA" in line or "peak" in line), "")
            labels = h5py.File(prediction, "r")["labels"][()]
            reference = np.asarray(nib.load(dataset / f"labelsTs/{case}.nii.gz").dataobj).transpose(2, 1, 0)
            dice.append(foreground_dice(labels, reference, 3))
        rows.append((name, passes, seconds, dice))
    print(f"\nmni-brain-3d, {len(cases)} held-out test cases; 5 folds of {args.steps} steps each "
          f"({train_seconds / 60:.1f} min to train them all); CPU {cpu}; {args.threads} threads\n{isa}")
    print(f"{'configuration':28s}{'passes/slice':>14s}{'seconds':>10s}{'fg Dice':>10s}{'p vs fold 0':>14s}")
    for name, passes, seconds, dice in rows:
        p = "" if name == "fold 0" else f"{wilcoxon(dice, rows[0][3]).pvalue:.3g}"
        print(f"{name:28s}{passes:>14s}{seconds:>10.1f}{np.mean(dice):>10.4f}{p:>14s}")
    (out / "summary.json").write_text(json.dumps({
        "cpu": cpu, "isa": isa, "steps": args.steps, "train_seconds": train_seconds, "cases": cases,
        "rows": [{"configuration": n, "passes": p, "seconds": s, "dice": d} for n, p, s, d in rows]}, indent=1))


if __name__ == "__main__":
    main()
