"""Regenerates Tests/SliceLabTests/Fixtures/dataset_metrics_goldens.json: medpy's 3-D metrics on the label
volumes of the synthetic nnU-Net set that DatasetLayoutTests builds (the same integer formulas, below and in
`DatasetFixtures.swift`), with its anisotropic spacing (z, y, x) = (3.0, 0.75, 1.25) mm.

For each case k and class c in 1, 2: medpy.metric.binary dc, hd, hd95 (pooled over both directions, as
`--hd95 pooled`), assd, with voxelspacing=(z, y, x). Versions are recorded in `versions`.

Run:  python3 -m venv /tmp/medpy-venv && /tmp/medpy-venv/bin/pip install -r Datasets/goldens/requirements-dataset-metrics.txt
      /tmp/medpy-venv/bin/python Datasets/goldens/dataset_metrics_goldens.py
"""
import json
import pathlib
from importlib.metadata import version

import numpy as np
from medpy.metric import binary

from synthetic_nnunet import SHAPE, SPACING, reference

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "Tests/SliceLabTests/Fixtures/dataset_metrics_goldens.json"
CASES = 4


def prediction(k):
    z, y, x = np.meshgrid(*[np.arange(n) for n in SHAPE], indexing="ij")
    labels = np.zeros(SHAPE, np.uint8)
    cz, cy, cx = 3 + k % 2, 7, 5 + k
    labels[4 * (z - cz) ** 2 + (y - cy) ** 2 + (x - cx) ** 2 <= 16 + 3 * k] = 1
    labels[(z >= 2) & (z <= 6) & (y >= 11) & (y <= 13) & (x >= 9) & (x <= 14)] = 2
    return labels


def main():
    cases = []
    for k in range(CASES):
        ref, pred = reference(k), prediction(k)
        row = {"case": f"case_{k:03d}", "reference_sum": int(ref.astype(np.int64).sum()),
               "prediction_sum": int(pred.astype(np.int64).sum())}
        for c in (1, 2):
            r, p = ref == c, pred == c
            row[str(c)] = {
                "dice": repr(float(binary.dc(p, r))),
                "hd": repr(float(binary.hd(p, r, voxelspacing=SPACING))),
                "hd95": repr(float(binary.hd95(p, r, voxelspacing=SPACING))),
                "assd": repr(float(binary.assd(p, r, voxelspacing=SPACING))),
            }
        cases.append(row)
    out = {"generated_by": "Datasets/goldens/dataset_metrics_goldens.py",
           "versions": {name: version(name) for name in ("medpy", "numpy", "scipy")},
           "shape_zyx": SHAPE, "spacing_zyx": SPACING, "cases": cases}
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
