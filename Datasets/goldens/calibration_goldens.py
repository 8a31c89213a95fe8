"""Regenerates Tests/MetricsTests/Fixtures/calibration_goldens.json: made 2-D and 3-D cases (class probabilities
from a softmax of smooth random logits, stored as float32; predictions their argmax; references the predictions
with seeded errors, likelier where the probabilities are uncertain) and, per class against the rest, the calibration metrics SliceLab's `evaluate --prob` computes:

- Brier score: scikit-learn's `brier_score_loss`;
- negative log-likelihood: scikit-learn's `log_loss` (no probability here is within 1e-7 of 0 or 1, so SliceLab's
  clipping does not act);
- expected calibration error over 15 equal-width bins: a numpy reference written from the definition (netcal's
  ECE is top-label, not per class);
- the area under the ROC curve of the predictive entropy (natural log) as a detector of wrong voxels among those
  predicted as the class: scikit-learn's `roc_auc_score`.

Run in a venv with Datasets/goldens/requirements-calibration.txt:  python Datasets/goldens/calibration_goldens.py
Versions are recorded in the output; values are strings (repr of float64, "nan").
"""
import json
import pathlib
from importlib.metadata import version

import numpy as np
import scipy.ndimage as ndi
from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score

SEED = 20261207
BINS = 15
rng = np.random.default_rng(SEED)
OUT = pathlib.Path(__file__).resolve().parents[2] / "Tests/MetricsTests/Fixtures/calibration_goldens.json"


def s(x):
    return repr(float(x))


def case(shape, k, sharpness, flips):
    logits = np.stack([ndi.gaussian_filter(rng.standard_normal(shape), 2) * sharpness for _ in range(k)])
    p = np.exp(logits - logits.max(axis=0))
    p = (p / p.sum(axis=0)).astype(np.float32)  # [K, *shape]
    prediction = p.argmax(axis=0)
    reference = prediction.copy()
    entropy = -(p * np.log(p)).sum(axis=0) / np.log(k)  # errors where the model is unsure, mostly
    wrong = rng.random(shape) < flips * 2 * entropy
    reference[wrong] = rng.integers(0, k, wrong.sum())
    return p, prediction, reference


def metrics(p, prediction, reference, k):
    p64 = p.astype(np.float64).reshape(k, -1)
    pred, ref = prediction.reshape(-1), reference.reshape(-1)
    entropy = -(p64 * np.log(p64)).sum(axis=0)
    out = {"ece": [], "brier": [], "nll": [], "entropy_error_auroc": []}
    for c in range(k):
        y, q = (ref == c).astype(np.float64), p64[c]
        bins = np.minimum((q * BINS).astype(int), BINS - 1)
        ece = sum(np.sum(bins == b) / q.size * abs(y[bins == b].mean() - q[bins == b].mean())
                  for b in range(BINS) if np.any(bins == b))
        out["ece"].append(s(ece))
        out["brier"].append(s(brier_score_loss(y, q)))
        out["nll"].append(s(log_loss(y, q, labels=[0, 1])))
        chosen = pred == c
        wrong = (ref[chosen] != c)
        auroc = roc_auc_score(wrong, entropy[chosen]) if 0 < wrong.sum() < wrong.size else float("nan")
        out["entropy_error_auroc"].append(s(auroc))
    return out


def main():
    result = {"versions": {"numpy": version("numpy"), "scipy": version("scipy"),
                           "scikit-learn": version("scikit-learn")},
              "seed": SEED, "bins": BINS, "cases": []}
    for name, shape, k, sharpness, flips in [("slice", (40, 52), 3, 6.0, 0.08), ("volume", (4, 20, 24), 4, 8.0, 0.12),
                                              ("confident", (30, 30), 3, 11.0, 0.03)]:
        p, prediction, reference = case(shape, k, sharpness, flips)
        assert p.min() > 1e-7 and p.max() < 1 - 1e-7
        # [frames, K, rows, columns] as segment writes it (2-D: [K, rows, columns]).
        stored = p if len(shape) == 2 else np.moveaxis(p, 0, 1)
        result["cases"].append({
            "name": name, "shape": list(shape), "class_count": k,
            "probabilities": [f"{v:.9g}" for v in stored.reshape(-1)],  # float32 round trip
            "prediction": "".join(str(v) for v in prediction.reshape(-1)),
            "reference": "".join(str(v) for v in reference.reshape(-1)),
            "metrics": metrics(p, prediction, reference, k)})
    OUT.write_text(json.dumps(result) + "\n")
    print(f"wrote {OUT}: {len(result['cases'])} cases")


if __name__ == "__main__":
    main()
