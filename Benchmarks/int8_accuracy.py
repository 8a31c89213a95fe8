"""int8 accuracy on the bundled sets' test splits (issue #19): for each bundled model, `slicelab quantize` with each
calibration method on the set's training split, then `slicelab segment` of every test image with the float32 and
the int8 checkpoints; prints the pixel agreement of the labels with float32 and each class's mean Dice (against the
reference labels) in float32 and int8, and the change.

    .venv/bin/python Benchmarks/int8_accuracy.py [--binary .build/release/slicelab] [--methods minmax,percentile,entropy]
"""
import argparse
import json
import pathlib
import subprocess
import tempfile

import h5py
import numpy as np
from PIL import Image

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEMO = ROOT / "Sources/SliceLabKit/Resources/Demo"


def dice(prediction, reference, k):
    p, r = prediction == k, reference == k
    total = p.sum() + r.sum()
    return float("nan") if total == 0 else 2 * float((p & r).sum()) / float(total)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=str(ROOT / ".build/release/slicelab"))
    parser.add_argument("--methods", default="minmax,percentile,entropy")
    parser.add_argument("--threads", default="2")
    args = parser.parse_args()
    methods = args.methods.split(",")
    with tempfile.TemporaryDirectory() as folder:
        work = pathlib.Path(folder)
        for name in ("mni-brain", "brain-lesion"):
            dataset = DEMO / name
            description = json.loads((dataset / "dataset.json").read_text())
            classes = description["classes"]
            model = DEMO / "models" / f"{name}.h5"
            variants = {"fp32": model}
            for method in methods:
                out = work / f"{name}-{method}.h5"
                subprocess.run([args.binary, "quantize", str(model), "--calibrate", str(dataset), "--method", method,
                                "--out", str(out), "--threads", args.threads], check=True, capture_output=True)
                variants[method] = out
            labels = {v: [] for v in variants}
            references = []
            for case in description["splits"]["test"]:
                references.append(np.array(Image.open(dataset / "labels" / f"{case}.png")))
                for variant, checkpoint in variants.items():
                    out = work / f"{name}-{variant}-{case}.h5"
                    subprocess.run([args.binary, "segment", str(dataset / "images" / f"{case}.dcm"), "--model",
                                    str(checkpoint), "--out", str(out), "--threads", args.threads], check=True,
                                   capture_output=True)
                    with h5py.File(out) as f:
                        labels[variant].append(f["labels"][0])
            print(f"{name}: {len(references)} test slices, calibration on the {len(description['splits']['train'])} "
                  f"training slices")
            fp32_dice = {k: np.nanmean([dice(p, r, k) for p, r in zip(labels["fp32"], references)])
                         for k in range(1, len(classes))}
            print("  fp32 mean Dice: " + ", ".join(f"{classes[k]} {d:.4f}" for k, d in fp32_dice.items()))
            for method in methods:
                agreement = np.mean(np.concatenate([(a == b).ravel() for a, b in zip(labels[method], labels["fp32"])]))
                changes = []
                for k in range(1, len(classes)):
                    d = np.nanmean([dice(p, r, k) for p, r in zip(labels[method], references)])
                    changes.append(f"{classes[k]} {d:.4f} ({d - fp32_dice[k]:+.4f})")
                print(f"  int8 {method:10} labels agree with fp32 on {100 * agreement:.2f} % of pixels; mean Dice: "
                      + ", ".join(changes))


if __name__ == "__main__":
    main()
