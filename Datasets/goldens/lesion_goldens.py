"""Regenerates Tests/MetricsTests/Fixtures/lesion_goldens.json: made 3-D and 2-D cases with BraTS labels (1 NETC,
2 SNFH, 3 ET; 4 RC) and the lesion-wise results brats-evaluation computes on them, with the evaluator of its bundled
`gli` configuration (panoptica: connected components, one-to-one matching of largest total Dice among overlapping
pairs, per-pair Dice, IoU and HD95, with voxel spacing).

Run in a venv with Datasets/goldens/requirements-lesions.txt:
    python Datasets/goldens/lesion_goldens.py
Peers and versions are recorded in the output (`versions`). Values are strings (repr of float64, "nan", "inf").

Per case and per single-label group (netc, snfh, et, rc) the file keeps panoptica's counts and means as panoptica
reports them (`tp`, `fp`, `fn`, `prec`, `rec`, `rq`, `sq`, `pq`, `sq_dsc`, `sq_hd95`); SliceLab's lesion-wise Dice
and HD95 follow from them as BraTS scores lesions (unmatched lesions on either side score Dice 0 and HD95 374 mm):
    lesion_dice = sq_dsc · tp / (tp + fp + fn),  lesion_hd95 = (sq_hd95 · tp + 374 · (fp + fn)) / (tp + fp + fn).
"""
import json
import pathlib
import tempfile
import warnings
from importlib.metadata import version
from importlib.resources import files

import numpy as np
from panoptica import Panoptica_Evaluator

warnings.filterwarnings("ignore")
SEED = 20261206
rng = np.random.default_rng(SEED)
ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "Tests/MetricsTests/Fixtures/lesion_goldens.json"
CONFIG = files("brats_evaluation").joinpath("configs", "config_gli.yaml")
GROUPS = {"netc": 1, "snfh": 2, "et": 3, "rc": 4}


def s(x):
    return repr(float(x))


def ellipsoid(shape, centre, radii):
    grids = np.meshgrid(*[np.arange(n) for n in shape], indexing="ij")
    return sum(((g - c) / r) ** 2 for g, c, r in zip(grids, centre, radii)) <= 1


def lesion_case(shape, count, label_choices, jitter, miss, extra, split):
    """A reference of `count` ellipsoids and a prediction that moves, grows or shrinks each, misses some, adds
    false positives and splits or merges some, labels drawn from `label_choices`."""
    ref = np.zeros(shape, np.uint8)
    pred = np.zeros(shape, np.uint8)
    for _ in range(count):
        label = int(rng.choice(label_choices))
        centre = [rng.uniform(1, n - 2) for n in shape]  # some touch the border
        radii = [rng.uniform(0.8, max(1.2, n / 5)) for n in shape]
        ref[ellipsoid(shape, centre, radii)] = label
        if rng.random() < miss:
            continue
        moved = [c + rng.normal(0, jitter) for c in centre]
        scaled = [r * rng.uniform(0.6, 1.4) for r in radii]
        blob = ellipsoid(shape, moved, scaled)
        if rng.random() < split:  # cut the predicted lesion in two along its first axis
            axis = 0
            cut = int(round(moved[axis]))
            index = [slice(None)] * len(shape)
            index[axis] = slice(max(cut, 0), min(cut + 1, shape[axis]))
            blob[tuple(index)] = False
        pred[blob] = label
    for _ in range(extra):
        label = int(rng.choice(label_choices))
        centre = [rng.uniform(0, n - 1) for n in shape]
        pred[ellipsoid(shape, centre, [rng.uniform(0.6, 2.5) for _ in shape])] = label
    return ref, pred


def cases():
    out = []
    three = (14, 26, 26)
    settings = [
        ("few-3d", three, (1.0, 1.0, 1.0), dict(count=3, label_choices=[1, 2, 3], jitter=0.8, miss=0.0, extra=0,
                                                   split=0.0)),
        ("misses-and-false-positives-3d", three, (1.0, 1.0, 1.0),
         dict(count=6, label_choices=[3], jitter=1.0, miss=0.3, extra=3, split=0.0)),
        ("splits-and-merges-3d", three, (1.0, 1.0, 1.0),
         dict(count=5, label_choices=[2, 3], jitter=1.5, miss=0.1, extra=1, split=0.5)),
        ("anisotropic-3d", three, (3.0, 0.8, 0.8),
         dict(count=6, label_choices=[1, 2, 3, 4], jitter=1.2, miss=0.2, extra=2, split=0.3)),
        ("many-small-3d", three, (1.0, 1.0, 1.0),
         dict(count=14, label_choices=[3], jitter=1.0, miss=0.2, extra=5, split=0.2)),
        ("crowded-3d", three, (1.0, 0.9, 0.9),
         dict(count=10, label_choices=[1, 3], jitter=2.0, miss=0.1, extra=2, split=0.4)),
    ]
    for name, shape, spacing, options in settings:
        ref, pred = lesion_case(shape, **options)
        out.append((name, ref, pred, spacing))
    # Edge cases: nothing predicted, nothing to find, neither.
    ref, _ = lesion_case(three, count=4, label_choices=[3], jitter=0, miss=0, extra=0, split=0)
    out.append(("empty-prediction-3d", ref, np.zeros_like(ref), (1.0, 1.0, 1.0)))
    _, pred = lesion_case(three, count=0, label_choices=[3], jitter=0, miss=0, extra=3, split=0)
    out.append(("empty-reference-3d", np.zeros_like(pred), pred, (1.0, 1.0, 1.0)))
    out.append(("both-empty-3d", np.zeros(three, np.uint8), np.zeros(three, np.uint8), (1.0, 1.0, 1.0)))
    # 2-D: evaluated by panoptica as one slice of a volume, so its components are 8-connected (26 in 3-D).
    for index in range(2):
        ref, pred = lesion_case((48, 48), count=8, label_choices=[1, 3], jitter=1.5, miss=0.2, extra=3, split=0.0)
        out.append((f"slice-2d-{index}", ref, pred, (0.7, 0.7)))
    return out


def with_iou():
    """The bundled configuration with IoU among the instance metrics (it computes DSC, NSD and HD95 only), for
    panoptic quality; IoU's zero-TP handling is DSC's."""
    text = CONFIG.read_text()
    text = text.replace("instance_metrics: [!Metric DSC,", "instance_metrics: [!Metric DSC, !Metric IOU,")
    dsc = text[text.index("    !Metric DSC: !MetricZeroTPEdgeCaseHandling"):text.index("    !Metric NSD:")]
    text = text.replace(dsc, dsc + dsc.replace("!Metric DSC", "!Metric IOU"))
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "config_gli_iou.yaml"
        path.write_text(text)
        return Panoptica_Evaluator.load_from_config(str(path))


def evaluate(evaluators, ref, pred, spacing):
    ref3, pred3 = (ref[None], pred[None]) if ref.ndim == 2 else (ref, pred)
    spacing3 = (1.0,) + tuple(spacing) if ref.ndim == 2 else tuple(spacing)
    brats, iou = (e.evaluate(pred3, ref3, voxelspacing=spacing3, verbose=False) for e in evaluators)
    out = {}
    for group in GROUPS:
        d, q = brats[group].to_dict(True), iou[group].to_dict(True)
        assert (d["tp"], d["fp"], d["fn"]) == (q["tp"], q["fp"], q["fn"])
        out[group] = {key: s(d.get(key, np.nan)) for key in ["tp", "fp", "fn", "prec", "rec", "rq", "sq_dsc", "sq_hd95"]}
        out[group].update({key: s(q.get(key, np.nan)) for key in ["sq", "pq"]})
    return out


def main():
    evaluators = (Panoptica_Evaluator.load_from_config(str(CONFIG)), with_iou())
    result = {
        "versions": {"brats-evaluation": version("brats-evaluation"), "panoptica": version("panoptica"),
                     "numpy": version("numpy"), "scipy": version("scipy"),
                     "connected-components-3d": version("connected-components-3d")},
        "seed": SEED, "config": "brats_evaluation/configs/config_gli.yaml", "groups": GROUPS,
        "cases": [],
    }
    for name, ref, pred, spacing in cases():
        result["cases"].append({
            "name": name, "shape": list(ref.shape), "spacing": list(spacing), "class_count": 5,
            "reference": "".join(str(v) for v in ref.ravel()), "prediction": "".join(str(v) for v in pred.ravel()),
            "brats": evaluate(evaluators, ref, pred, spacing),
        })
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {OUT}: {len(result['cases'])} cases")


if __name__ == "__main__":
    main()
