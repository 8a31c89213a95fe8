"""SliceLab's public outputs, for the notebooks: the built `slicelab` command line and the files it writes.

Everything here rests on the contracts written in the issues (and the README), never on SliceLab's internals:

* the results file of `slicelab evaluate` / `slicelab compare` (issue #7),
* the HDF5 file of `slicelab convert PATH OUT.h5` (issue #3),
* the HDF5 file of `slicelab cluster … --out OUT.h5` (issue #6).

Each `check_*` function raises `ContractError` (naming the file, the object and what is wrong) when a file does
not follow its contract, so a notebook fails loudly instead of drawing a wrong picture.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import warnings
from datetime import datetime
from pathlib import Path

import h5py
import numpy as np

NOTEBOOKS = Path(__file__).resolve().parent
ROOT = NOTEBOOKS.parent
OUTPUT = Path(os.environ.get("SLICELAB_NOTEBOOK_OUTPUT", NOTEBOOKS / "output"))

# The results-file contract (issue #7).
RUN_ATTRIBUTES = ("method", "model", "dataset", "created", "software_version", "config", "hd95_definition",
                  "empty_rule")
METRICS = ("dice", "iou", "precision", "recall", "specificity", "accuracy", "volume_similarity", "volume_ref_ml",
           "volume_pred_ml", "hd", "hd95", "assd", "nsd")
# With lesion classes (the run's `lesion_classes` attribute), also these; NaN for the other classes.
LESION_METRICS = ("lesion_dice", "lesion_hd95", "lesion_sensitivity", "lesion_precision", "lesion_f1",
                  "panoptic_quality")
# With the prediction's probabilities (the run's `calibration_bins` attribute), also these.
CALIBRATION_METRICS = ("ece", "brier", "nll", "entropy_error_auroc")
OVERLAP_METRICS = ("dice", "iou", "precision", "recall", "specificity", "accuracy", "volume_similarity")
DISTANCE_METRICS = ("hd", "hd95", "assd")
SUMMARY_COLUMNS = ("mean", "std", "median", "ci_low", "ci_high", "n_valid")
COMPARISON_COLUMNS = ("mean_difference", "ci_low", "ci_high", "wilcoxon_p")

# The convert contract (issue #3) and the cluster contract (issue #6).
CONVERT_ATTRIBUTES = ("spacing", "photometric_interpretation", "modality", "rescale_slope", "rescale_intercept",
                      "transfer_syntax_uid", "source")
CLUSTER_METHODS_WITH_CENTERS = ("kmeans", "fcm", "gmm")
CLUSTER_METHODS_WITH_THRESHOLDS = ("otsu", "multiotsu")


class ContractError(Exception):
    """A SliceLab output that does not follow its documented layout."""


class SliceLabFailed(Exception):
    """`slicelab` exited with an error: the command line, its status and its stderr."""


class CommandNotAvailable(Exception):
    """The built `slicelab` says this subcommand has not landed yet (exit 2, 'not available in this build yet').

    `run_notebooks.py` reports a notebook stopped by this as NOT AVAILABLE, never as passed.
    """


# MARK: - The command line

def binary() -> Path:
    """The built `slicelab`: `SLICELAB_BINARY`, else `.build/release/slicelab`, else `.build/debug/slicelab`."""
    if "SLICELAB_BINARY" in os.environ:
        path = Path(os.environ["SLICELAB_BINARY"])
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise FileNotFoundError(f"SLICELAB_BINARY={path} is not an executable file")
        return path
    for configuration in ("release", "debug"):
        path = ROOT / ".build" / configuration / "slicelab"
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError(f"no built slicelab under {ROOT / '.build'}: run `swift build` (or `make build`) first, "
                            "or set SLICELAB_BINARY")


def slicelab(*arguments, timeout: float = 600, echo: bool = True) -> subprocess.CompletedProcess:
    """Runs `slicelab ARGUMENTS…` and returns the finished process (stdout and stderr as text).

    Raises `CommandNotAvailable` when this build does not have the subcommand yet, `SliceLabFailed` on any other
    non-zero exit, with the command's stderr.
    """
    command = [str(binary())] + [str(argument) for argument in arguments]
    if echo:  # paths inside the repository are printed relative to it
        print("$ slicelab " + " ".join(str(argument) for argument in arguments).replace(f"{ROOT}/", ""), flush=True)
    started = time.monotonic()
    process = subprocess.run(command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if process.returncode == 2 and "not available in this build yet" in process.stderr:
        raise CommandNotAvailable(process.stderr.strip())
    if process.returncode != 0:
        raise SliceLabFailed(f"slicelab {' '.join(map(str, arguments))} exited with status {process.returncode}:\n"
                             f"{process.stderr.strip()}")
    if echo:
        print(f"  (exit 0 in {time.monotonic() - started:.1f} s)", flush=True)
    return process


# Arguments that each subcommand parses but cannot act on (paths that do not exist): enough to learn whether this
# build has the subcommand without doing any work. A real command then fails on the missing input, exit 1.
_PROBES = {
    "convert": ["{missing}/in.dcm", "{missing}/out.h5"],
    "cluster": ["{missing}/in.png", "--method", "kmeans", "--classes", "2", "--out", "{missing}/out.h5"],
    "evaluate": ["--pred", "{missing}/pred.png", "--ref", "{missing}/ref.png", "--out", "{missing}/out.h5"],
    "compare": ["{missing}/set", "--model", "{missing}/model.h5", "--out", "{missing}/out.h5"],
    "segment": ["{missing}/in.png", "--model", "{missing}/model.h5", "--out", "{missing}/out.h5"],
}


def available(command: str) -> bool:
    """Whether this build of `slicelab` has `command` (False while it says 'not available in this build yet')."""
    missing = OUTPUT / "no-such-folder"
    arguments = [argument.format(missing=missing) for argument in _PROBES[command]]
    process = subprocess.run([str(binary()), command] + arguments, capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL)
    if missing.exists():
        raise RuntimeError(f"slicelab {command} created {missing} while probing with missing inputs")
    if process.returncode == 0:
        raise RuntimeError(f"slicelab {command} succeeded on missing inputs: {' '.join(arguments)}")
    return not (process.returncode == 2 and "not available in this build yet" in process.stderr)


def output_folder(name: str, fresh: bool = True) -> Path:
    """`Notebooks/output/NAME/` (git-ignored), emptied first unless `fresh` is false."""
    folder = OUTPUT / name
    if fresh and folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def save_figure(figure, folder: Path, name: str) -> Path:
    """Saves a matplotlib figure as `folder/name.png` (150 dpi) and returns the path."""
    path = folder / f"{name}.png"
    figure.savefig(path, dpi=150, bbox_inches="tight")
    print(f"figure: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return path


# MARK: - Small readers

def text(value) -> str:
    """An HDF5 string (attribute or element, bytes or str) as `str`."""
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    return value.decode("utf-8") if isinstance(value, (bytes, np.bytes_)) else str(value)


def strings(dataset: h5py.Dataset) -> list[str]:
    """A 1-D HDF5 string dataset as a list of `str`."""
    if dataset.ndim != 1 or dataset.dtype.kind not in ("S", "O", "U"):
        raise ContractError(f"{dataset.file.filename}: {dataset.name} must be a 1-D string dataset, "
                            f"found {dataset.dtype} {dataset.shape}")
    return [text(value) for value in dataset[()]]


def _fail(h5: h5py.File, where: str, what: str):
    raise ContractError(f"{h5.filename}: {where}: {what}")


def _require_dataset(h5, path: str, ndim: int | None = None, kinds: str | None = None) -> h5py.Dataset:
    if path not in h5 or not isinstance(h5[path], h5py.Dataset):
        _fail(h5, path, "missing dataset")
    dataset = h5[path]
    if ndim is not None and dataset.ndim != ndim:
        _fail(h5, path, f"expected {ndim} dimensions, found shape {dataset.shape}")
    if kinds is not None and dataset.dtype.kind not in kinds:
        _fail(h5, path, f"unexpected element type {dataset.dtype}")
    return dataset


def _require_type(h5, path: str, dtypes: tuple) -> h5py.Dataset:
    dataset = _require_dataset(h5, path)
    if dataset.dtype not in [np.dtype(t) for t in dtypes]:
        _fail(h5, path, f"element type must be {' or '.join(np.dtype(t).name for t in dtypes)}, found {dataset.dtype}")
    return dataset


# MARK: - The results file (issue #7)

def check_results_file(path) -> dict:
    """Checks a results file against issue #7's layout and returns `{run: {"cases": n, "classes": n}}`.

    Beyond names, shapes and types it checks what the contract implies: Dice and IoU equal what the stored
    confusion matrix gives wherever the reference is not empty (1e-9 absolute), the Dice summary's mean, median
    and valid count equal those of the stored per-case values, and every comparison names two stored runs.
    """
    runs = {}
    with h5py.File(path, "r") as h5:
        if "runs" not in h5 or len(h5["runs"]) == 0:
            _fail(h5, "/runs", "no runs in the file")
        for run, group in h5["runs"].items():
            where = f"/runs/{run}"
            missing = [name for name in RUN_ATTRIBUTES if name not in group.attrs]
            if missing:
                _fail(h5, where, f"missing attributes {missing}")
            created = text(group.attrs["created"])
            try:
                datetime.fromisoformat(created)
            except ValueError:
                _fail(h5, where, f"attribute created={created!r} is not ISO 8601")
            try:
                json.loads(text(group.attrs["config"]))
            except json.JSONDecodeError as error:
                _fail(h5, where, f"attribute config is not JSON ({error})")
            cases = strings(_require_dataset(h5, f"{where}/case_ids", ndim=1))
            classes = strings(_require_dataset(h5, f"{where}/class_names", ndim=1))
            n, k = len(cases), len(classes)
            if n == 0 or k == 0:
                _fail(h5, where, f"{n} cases and {k} classes")
            if len(set(cases)) != n:
                _fail(h5, f"{where}/case_ids", "duplicate case ids")
            spacing = _require_type(h5, f"{where}/spacing", ("float64",))
            if spacing.shape != (n, 3):
                _fail(h5, f"{where}/spacing", f"shape {spacing.shape}, expected ({n}, 3)")
            if "metrics" not in group:
                _fail(h5, f"{where}/metrics", "missing group")
            names = set(group["metrics"].keys())
            lesions = [int(c) for c in np.atleast_1d(group.attrs.get("lesion_classes", []))]
            expected = (set(METRICS) | (set(LESION_METRICS) if lesions else set())
                        | (set(CALIBRATION_METRICS) if "calibration_bins" in group.attrs else set()))
            if names != expected:
                _fail(h5, f"{where}/metrics", f"metric names differ from the contract: missing "
                      f"{sorted(expected - names)}, unexpected {sorted(names - expected)}")
            if any(not 0 < c < k for c in lesions):
                _fail(h5, where, f"lesion_classes {lesions} are not foreground classes of {k}")
            for name in LESION_METRICS if lesions else ():
                lesion_values = _require_type(h5, f"{where}/metrics/{name}", ("float64",))[()]
                others = [c for c in range(k) if c not in lesions]
                if lesion_values.shape != (n, k) or not np.isnan(lesion_values[:, others]).all():
                    _fail(h5, f"{where}/metrics/{name}", "expected [cases, classes], NaN outside lesion_classes")
            values = {}
            for name in METRICS:
                dataset = _require_type(h5, f"{where}/metrics/{name}", ("float64",))
                if dataset.shape != (n, k):
                    _fail(h5, dataset.name, f"shape {dataset.shape}, expected ({n}, {k})")
                values[name] = dataset[()]
            confusion = _require_type(h5, f"{where}/confusion", ("int64",))
            if confusion.shape != (n, k, k):
                _fail(h5, confusion.name, f"shape {confusion.shape}, expected ({n}, {k}, {k})")
            confusion = confusion[()]
            if (confusion < 0).any():
                _fail(h5, f"{where}/confusion", "negative counts")
            _check_overlap_against_confusion(h5, where, confusion, values)
            _check_volumes_against_confusion(h5, where, confusion, values)
            for name in METRICS:
                summary = _require_type(h5, f"{where}/summary/{name}", ("float64",))
                if summary.shape != (k, len(SUMMARY_COLUMNS)):
                    _fail(h5, summary.name, f"shape {summary.shape}, expected ({k}, {len(SUMMARY_COLUMNS)})")
            _check_dice_summary(h5, where, values["dice"], h5[f"{where}/summary/dice"][()])
            if "labels" in group:
                for case, dataset in group["labels"].items():
                    if case not in cases:
                        _fail(h5, dataset.name, "a label map for a case that is not in case_ids")
                    if dataset.dtype not in (np.uint8, np.uint16) or dataset.ndim not in (2, 3):
                        _fail(h5, dataset.name, f"must be uint8/uint16 2-D or 3-D, found {dataset.dtype} "
                              f"{dataset.shape}")
            runs[run] = {"cases": n, "classes": k}
        for pair, group in h5.get("comparisons", {}).items():
            run_a, separator, run_b = pair.partition("__")
            if not separator or run_a not in runs or run_b not in runs:
                _fail(h5, f"/comparisons/{pair}", "the name must be <runA>__<runB> with both runs in /runs")
            k = runs[run_a]["classes"]
            for name, dataset in group.items():
                if name not in METRICS + LESION_METRICS + CALIBRATION_METRICS:
                    _fail(h5, dataset.name, "not a metric of the contract")
                if dataset.dtype != np.float64 or dataset.shape != (k, len(COMPARISON_COLUMNS)):
                    _fail(h5, dataset.name, f"must be float64 ({k}, 4), found {dataset.dtype} {dataset.shape}")
                p = dataset[:, 3]
                if ((p < 0) | (p > 1)).any():
                    _fail(h5, dataset.name, f"Wilcoxon p-values outside [0, 1]: {p}")
    return runs


def _check_overlap_against_confusion(h5, where, confusion, values):
    """Dice = 2TP / (2TP + FP + FN), IoU = TP / (TP + FP + FN) per case and class, where the reference is not
    empty; confusion rows are the reference, columns the prediction."""
    tp = np.einsum("nkk->nk", confusion).astype(np.float64)
    reference = confusion.sum(axis=2).astype(np.float64)
    predicted = confusion.sum(axis=1).astype(np.float64)
    fp, fn = predicted - tp, reference - tp
    present = reference > 0
    dice = np.divide(2 * tp, 2 * tp + fp + fn, out=np.full_like(tp, np.nan), where=present)
    iou = np.divide(tp, tp + fp + fn, out=np.full_like(tp, np.nan), where=present)
    for name, expected in (("dice", dice), ("iou", iou)):
        stored = values[name]
        wrong = present & ~(np.abs(stored - expected) <= 1e-9)
        if wrong.any():
            case, klass = np.argwhere(wrong)[0]
            _fail(h5, f"{where}/metrics/{name}", f"{wrong.sum()} values disagree with the confusion matrix, first "
                  f"at case {case}, class {klass}: stored {stored[case, klass]!r}, confusion gives "
                  f"{expected[case, klass]!r}")
    rule = text(h5[where].attrs["empty_rule"])
    both_empty = ~present & (predicted == 0)
    for name in ("dice", "iou"):
        stored = values[name]
        if rule == "nan" and not np.isnan(stored[~present]).all():
            _fail(h5, f"{where}/metrics/{name}", "empty_rule is 'nan' but a case with an empty reference has a value")
        if rule == "one" and not (stored[both_empty] == 1).all():
            _fail(h5, f"{where}/metrics/{name}", "empty_rule is 'one' but a case with both masks empty is not 1")
        if rule not in ("nan", "one"):
            _fail(h5, where, f"empty_rule must be 'nan' or 'one', found {rule!r}")


def _check_volumes_against_confusion(h5, where, confusion, values):
    """volume_ref_ml and volume_pred_ml are voxel counts (confusion row and column sums) times one voxel volume
    per case, the same for every class and both volumes; an empty mask has volume 0."""
    counts = {"volume_ref_ml": confusion.sum(axis=2), "volume_pred_ml": confusion.sum(axis=1)}
    for name, count in counts.items():
        if not (values[name][count == 0] == 0).all():
            _fail(h5, f"{where}/metrics/{name}", "an empty mask has a non-zero volume")
    for case in range(confusion.shape[0]):
        ratios = np.concatenate([values[name][case][counts[name][case] > 0] / counts[name][case][counts[name][case] > 0]
                                 for name in counts])
        if ratios.size and not np.allclose(ratios, ratios[0], rtol=1e-9, atol=0):
            _fail(h5, f"{where}/metrics/volume_*_ml", f"case {case}: the volumes are not voxel counts times one voxel "
                  f"volume (mL per voxel: {ratios})")


def voxel_volume_mm3(path, run: str) -> np.ndarray:
    """Per case, the voxel volume in mm³ that the run's volume_ref_ml rests on (volume / voxel count × 1000)."""
    with h5py.File(path, "r") as h5:
        confusion = h5[f"runs/{run}/confusion"][()]
        volume = h5[f"runs/{run}/metrics/volume_ref_ml"][()] + h5[f"runs/{run}/metrics/volume_pred_ml"][()]
    count = confusion.sum(axis=2) + confusion.sum(axis=1)
    return 1000 * volume.sum(axis=1) / np.maximum(count.sum(axis=1), 1)


def _check_dice_summary(h5, where, dice, summary):
    valid = ~np.isnan(dice)
    counts = valid.sum(axis=0)
    if not np.array_equal(summary[:, 5], counts.astype(np.float64)):
        _fail(h5, f"{where}/summary/dice", f"n_valid {summary[:, 5]} but the per-case Dice has {counts} valid values")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN class: the summary must say NaN too
        mean, median = np.nanmean(dice, axis=0), np.nanmedian(dice, axis=0)
    for column, expected in ((0, mean), (2, median)):
        stored = summary[:, column]
        if not np.allclose(stored, expected, rtol=0, atol=1e-9, equal_nan=True):
            _fail(h5, f"{where}/summary/dice", f"{SUMMARY_COLUMNS[column]} {stored} but the per-case Dice gives "
                  f"{expected}")


def tidy_results(path):
    """The results file as one tidy pandas table: a row per run × case × class × metric.

    Columns: run, method, case, class, metric, value, spacing_slice, spacing_row, spacing_column (mm).
    """
    import pandas as pd

    check_results_file(path)
    frames = []
    with h5py.File(path, "r") as h5:
        for run, group in h5["runs"].items():
            cases = strings(group["case_ids"])
            classes = strings(group["class_names"])
            spacing = group["spacing"][()]
            n, k = len(cases), len(classes)
            for name in [m for m in METRICS + LESION_METRICS + CALIBRATION_METRICS if m in group["metrics"]]:
                frames.append(pd.DataFrame({
                    "run": run, "method": text(group.attrs["method"]),
                    "case": np.repeat(cases, k), "class": np.tile(classes, n), "metric": name,
                    "value": group["metrics"][name][()].reshape(-1),  # [cases, classes], row-major
                    "spacing_slice": np.repeat(spacing[:, 0], k), "spacing_row": np.repeat(spacing[:, 1], k),
                    "spacing_column": np.repeat(spacing[:, 2], k)}))
    return pd.concat(frames, ignore_index=True)


# MARK: - convert (issue #3)

def check_convert_file(path) -> dict:
    """Checks `slicelab convert … OUT.h5` against issue #3 and returns the `/image` attributes as Python values.

    Grayscale: `/image` float32 [frames, rows, columns]; color: uint8/uint16 [frames, rows, columns, 3].
    """
    with h5py.File(path, "r") as h5:
        image = _require_dataset(h5, "/image")
        missing = [name for name in CONVERT_ATTRIBUTES if name not in image.attrs]
        if missing:
            _fail(h5, "/image", f"missing attributes {missing}")
        attributes = {name: image.attrs[name] for name in CONVERT_ATTRIBUTES}
        for name in ("photometric_interpretation", "modality", "transfer_syntax_uid", "source"):
            attributes[name] = text(attributes[name])
        for name in ("rescale_slope", "rescale_intercept"):
            attributes[name] = float(np.asarray(attributes[name]).reshape(-1)[0])
        spacing = np.asarray(attributes["spacing"], dtype=np.float64).reshape(-1)
        if spacing.size not in (2, 3) or not (spacing > 0).all():
            _fail(h5, "/image", f"attribute spacing (z, y, x mm; row, column[, slice] before geometry_version 2) "
                  f"must hold 2 or 3 positive values, found {spacing}")
        attributes["spacing"] = spacing
        color = attributes["photometric_interpretation"] not in ("MONOCHROME1", "MONOCHROME2")
        if color:
            if image.ndim != 4 or image.shape[3] != 3 or image.dtype not in (np.uint8, np.uint16):
                _fail(h5, "/image", f"a color image ({attributes['photometric_interpretation']}) must be uint8/uint16 "
                      f"[frames, rows, columns, 3], found {image.dtype} {image.shape}")
        elif image.ndim != 3 or image.dtype != np.float32:
            _fail(h5, "/image", f"a grayscale image must be float32 [frames, rows, columns], found {image.dtype} "
                  f"{image.shape}")
        attributes["shape"] = image.shape
        attributes["color"] = color
    return attributes


# MARK: - cluster (issue #6)

def check_cluster_file(path, method: str, classes: int, space: str) -> dict:
    """Checks `slicelab cluster … --out OUT.h5` against issue #6 and returns its arrays and attributes.

    `/labels` and `/regions` int32 of one shape, labels in 0..K-1 (every class used), `/centers` float64 [K, D]
    for kmeans/fcm/gmm, `/thresholds` float64 [K-1] ascending for otsu/multiotsu, attributes method, space,
    iterations, seed (and inertia for kmeans) on the root group.
    """
    result = {}
    with h5py.File(path, "r") as h5:
        labels = _require_type(h5, "/labels", ("int32",))
        regions = _require_type(h5, "/regions", ("int32",))
        if labels.ndim not in (2, 3) or regions.shape != labels.shape:
            _fail(h5, "/labels", f"/labels {labels.shape} and /regions {regions.shape} must share one 2-D or 3-D shape")
        result["labels"], result["regions"] = labels[()], regions[()]
        used = np.unique(result["labels"])
        if used.min() < 0 or used.max() >= classes:
            _fail(h5, "/labels", f"values {used.min()}..{used.max()} outside 0..{classes - 1}")
        if result["regions"].min() < 0:
            _fail(h5, "/regions", "negative region ids")
        required = ["method", "space", "iterations", "seed"] + (["inertia"] if method == "kmeans" else [])
        missing = [name for name in required if name not in h5.attrs]
        if missing:
            _fail(h5, "/", f"missing attributes {missing}")
        result["attributes"] = {name: (text(value) if isinstance(value, (bytes, str, np.bytes_)) else value)
                                for name, value in h5.attrs.items()}
        if result["attributes"]["method"] != method or result["attributes"]["space"] != space:
            _fail(h5, "/", f"attributes say method={result['attributes']['method']!r} "
                  f"space={result['attributes']['space']!r}, the command asked for {method!r} {space!r}")
        if method in CLUSTER_METHODS_WITH_CENTERS:
            centers = _require_type(h5, "/centers", ("float64",))
            if centers.ndim != 2 or centers.shape[0] != classes:
                _fail(h5, "/centers", f"shape {centers.shape}, expected ({classes}, D)")
            result["centers"] = centers[()]
        if method in CLUSTER_METHODS_WITH_THRESHOLDS:
            thresholds = _require_type(h5, "/thresholds", ("float64",))
            if thresholds.shape != (classes - 1,):
                _fail(h5, "/thresholds", f"shape {thresholds.shape}, expected ({classes - 1},)")
            result["thresholds"] = thresholds[()]
            if not (np.diff(result["thresholds"]) > 0).all():
                _fail(h5, "/thresholds", f"not strictly ascending: {result['thresholds']}")
    return result


# MARK: - Color

def srgb_to_lab(rgb) -> np.ndarray:
    """CIE L*a*b* (D65 white, 2° observer) of sRGB values in [0, 1], [..., 3] → [..., 3]: the formula of
    `skimage.color.rgb2lab` (IEC 61966-2-1 linearisation, the sRGB→XYZ matrix, then CIE 1976)."""
    rgb = np.asarray(rgb, dtype=np.float64)
    linear = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    matrix = np.array([[0.412453, 0.357580, 0.180423],
                       [0.212671, 0.715160, 0.072169],
                       [0.019334, 0.119193, 0.950227]])
    xyz = linear @ matrix.T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16.0 / 116.0)
    lightness = np.where(xyz[..., 1] > 0.008856, 116.0 * np.cbrt(xyz[..., 1]) - 16.0, 903.3 * xyz[..., 1])
    return np.stack([lightness, 500.0 * (f[..., 0] - f[..., 1]), 200.0 * (f[..., 1] - f[..., 2])], axis=-1)


# MARK: - The bundled demo data

DEMO = ROOT / "Sources" / "SliceLabKit" / "Resources" / "Demo"


def demo_dataset(name: str = "brain-lesion") -> Path:
    """The labeled set to run on: `SLICELAB_DATASET`, else the bundled demo set `name` (the `slicelab demo` data,
    `Sources/SliceLabKit/Resources/Demo/<name>/`)."""
    folder = Path(os.environ.get("SLICELAB_DATASET", DEMO / name))
    if not (folder / "dataset.json").is_file():
        raise FileNotFoundError(f"{folder} is not a labeled set (no dataset.json); set SLICELAB_DATASET")
    return folder


def demo_model(dataset: Path) -> Path | None:
    """The model to compare with: `SLICELAB_MODEL`, else the bundled checkpoint `Demo/models/<set name>.h5` that
    `slicelab demo` uses, or None while it is not in this checkout."""
    if "SLICELAB_MODEL" in os.environ:
        path = Path(os.environ["SLICELAB_MODEL"])
        if not path.is_file():
            raise FileNotFoundError(f"SLICELAB_MODEL={path} does not exist")
        return path
    name = json.loads((dataset / "dataset.json").read_text())["name"]
    path = DEMO / "models" / f"{name}.h5"
    return path if path.is_file() else None


DEMO_CLASSICAL = ("kmeans:space=gray,map=train-vote",)


def demo_comparison(classical=DEMO_CLASSICAL) -> Path:
    """`slicelab compare` on the bundled demo lesion set with its bundled model and the `classical` specs, into
    `Notebooks/output/demo-compare/results.h5`.

    Notebooks 01 and 02 both read it, so it is made once: the file is reused while the binary, the set's files,
    the model and the arguments are the same as when it was written (recorded beside it in `key.json`).
    Raises `CommandNotAvailable` while the bundled model is not in this checkout.
    """
    dataset = demo_dataset()
    model = demo_model(dataset)
    if model is None:
        raise CommandNotAvailable(f"the bundled model for {dataset.name!r} (issue #8) is not in this checkout "
                                  f"({DEMO / 'models'}); set SLICELAB_MODEL to a checkpoint")
    def stamp(path: Path) -> list:
        return [str(path), path.stat().st_size, path.stat().st_mtime_ns]
    key = json.dumps({"binary": stamp(binary()), "model": stamp(model), "classical": list(classical),
                      "dataset": sorted(stamp(path) for path in dataset.rglob("*") if path.is_file())})
    folder = OUTPUT / "demo-compare"
    results, recorded = folder / "results.h5", folder / "key.json"
    if results.is_file() and recorded.is_file() and recorded.read_text() == key:
        print(f"reusing {results.relative_to(ROOT)}: made by the same slicelab from the same set, model and arguments")
        return results
    folder = output_folder("demo-compare")
    arguments = [dataset, "--model", model]
    for spec in classical:
        arguments += ["--classical", spec]
    process = slicelab("compare", *arguments, "--out", results, "--timings")
    print(process.stdout)
    recorded.write_text(key)
    return results
