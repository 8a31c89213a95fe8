#!/usr/bin/env python3
"""Checks labeled sets against the format in Datasets/README.md and prints what they hold. A folder whose
dataset.json has `channel_names` and `file_ending` is checked as an nnU-Net v2 raw dataset instead (NIfTI or PNG
files; geometry read with SimpleITK as nnU-Net reads it, and cross-checked against nibabel).

    python Datasets/check_labeled_set.py SET [SET…] [--skip-bad] [--quiet]

Exit code 0 when every set is valid (with --skip-bad: when every split still has a case after skipping the
bad ones), 1 otherwise. Each problem is printed as `<set>: <case>: <cause>`."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

import numpy as np

CASE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
IMAGE_FORMS = (".dcm", ".png", ".h5")
LABEL_FORMS = (".png", ".h5", ".dcm")
SEGMENTATION_STORAGE = "1.2.840.10008.5.1.4.1.1.66.4"
NORMALIZATIONS = {"percentile", "window", "zscore", "minmax", "none"}


class SetError(Exception):
    """A problem with the set as a whole (never skippable)."""


class CaseError(Exception):
    """A problem with one case."""

    def __init__(self, case: str, cause: str):
        super().__init__(f"{case}: {cause}")
        self.case, self.cause = case, cause


# MARK: - dataset.json

def read_description(folder: Path) -> dict:
    path = folder / "dataset.json"
    if not path.is_file():
        raise SetError(f"{path}: missing (a labeled set needs dataset.json, images/ and labels/)")
    try:
        description = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SetError(f"{path}: not valid JSON: {error}") from None
    if not isinstance(description, dict):
        raise SetError(f"{path}: the top level must be an object")
    for key, kind in (("name", str), ("classes", list), ("modality", str), ("splits", dict)):
        if key not in description:
            raise SetError(f"{path}: missing required key '{key}'")
        if not isinstance(description[key], kind):
            raise SetError(f"{path}: '{key}' must be a{'n' if kind is list else ''} {kind.__name__}")
    if not description["name"].strip() or not description["modality"].strip():
        raise SetError(f"{path}: 'name' and 'modality' must not be empty")
    classes = description["classes"]
    if len(classes) < 2 or not all(isinstance(c, str) and c.strip() for c in classes):
        raise SetError(f"{path}: 'classes' must hold at least 2 non-empty strings, got {classes!r}")
    if len(set(classes)) != len(classes):
        raise SetError(f"{path}: 'classes' has duplicates: {classes!r}")
    for split, cases in description["splits"].items():
        if not isinstance(cases, list) or not all(isinstance(c, str) for c in cases):
            raise SetError(f"{path}: split '{split}' must be an array of case names")
    if "spacing" in description:
        spacing = description["spacing"]
        if (not isinstance(spacing, list) or len(spacing) != 2
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
                           for v in spacing)):
            raise SetError(f"{path}: 'spacing' must be [row, column] in mm, both > 0, got {spacing!r}")
    if "lesion_classes" in description:
        lesions = description["lesion_classes"]
        if not isinstance(lesions, list) or not all(isinstance(c, str) and c in classes[1:] for c in lesions):
            raise SetError(f"{path}: 'lesion_classes' must name foreground classes of {classes[1:]!r}, got {lesions!r}")
    if "preprocessing" in description:
        hint = description["preprocessing"]
        if not isinstance(hint, dict) or hint.get("normalize") not in NORMALIZATIONS:
            raise SetError(f"{path}: 'preprocessing.normalize' must be one of {sorted(NORMALIZATIONS)}")
        if hint["normalize"] == "window":
            center, width = hint.get("center"), hint.get("width")
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (center, width)) \
                    or not width > 0:
                raise SetError(f"{path}: window normalisation needs a center and a width > 0, got {hint!r}")
        if hint["normalize"] == "percentile":
            low, high = hint.get("low", 0.5), hint.get("high", 99.5)
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)) \
                    or not 0 <= low < high <= 100:
                raise SetError(f"{path}: percentile normalisation needs 0 <= low < high <= 100, got {hint!r}")
    return description


# MARK: - Readers (return arrays; shapes follow the README tables)

def _dicom():
    import pydicom
    return pydicom


def _physical(ds) -> np.ndarray:
    """Pixels through the Modality LUT (RescaleSlope/Intercept) for grayscale, as stored for colour."""
    if "PixelData" not in ds:
        raise ValueError("no pixel data")
    pixels = ds.pixel_array.astype(np.float64)
    if int(getattr(ds, "SamplesPerPixel", 1)) == 1:
        slope = float(getattr(ds, "RescaleSlope", 1) or 1)
        pixels = pixels * slope + float(getattr(ds, "RescaleIntercept", 0) or 0)
    return pixels


def read_dicom_image(path: Path) -> np.ndarray:
    return _physical(_dicom().dcmread(path))


def read_series(folder: Path) -> tuple[np.ndarray, list]:
    """(slices, rows, columns) ordered along the normal, and the datasets in that order."""
    pydicom = _dicom()
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    if not files:
        raise ValueError("series folder holds no file")
    slices = []
    for path in files:
        ds = pydicom.dcmread(path)
        if int(getattr(ds, "NumberOfFrames", 1) or 1) != 1:
            raise ValueError(f"{path.name}: a series folder holds single-frame slices only")
        slices.append(ds)
    series = {ds.SeriesInstanceUID for ds in slices}
    if len(series) != 1:
        raise ValueError(f"series folder mixes {len(series)} series")
    if len({(ds.Rows, ds.Columns) for ds in slices}) != 1:
        raise ValueError("slices differ in rows × columns")
    if all("ImagePositionPatient" in ds and "ImageOrientationPatient" in ds for ds in slices):
        orientation = np.array(slices[0].ImageOrientationPatient, dtype=float)
        normal = np.cross(orientation[:3], orientation[3:])
        slices.sort(key=lambda ds: float(np.dot(normal, np.array(ds.ImagePositionPatient, dtype=float))))
    else:
        slices.sort(key=lambda ds: int(getattr(ds, "InstanceNumber", 0) or 0))
    volume = np.stack([_physical(ds) for ds in slices])
    return volume, slices


def read_png(path: Path, single_channel: bool) -> np.ndarray:
    from PIL import Image
    with Image.open(path) as image:
        if image.format != "PNG":
            raise ValueError(f"not a PNG ({image.format})")
        mode = image.mode
        if single_channel:
            if mode not in ("L", "P", "I;16", "I;16B", "I", "1"):
                raise ValueError(f"a label PNG must have one channel (gray or palette), got mode {mode}")
            return np.asarray(image)
        if mode == "P":
            image = image.convert("RGB")
        elif mode in ("RGBA", "LA"):
            image = image.convert("RGB" if mode == "RGBA" else "L")
        return np.asarray(image)


def read_h5(path: Path, dataset: str) -> tuple[np.ndarray, object]:
    import h5py
    with h5py.File(path, "r") as file:
        if dataset not in file or not isinstance(file[dataset], h5py.Dataset):
            raise ValueError(f"no dataset {dataset}")
        return file[dataset][()], file[dataset].attrs.get("spacing")


def read_segmentation(path: Path, classes: list, image_shape: tuple, series: list | None) -> np.ndarray:
    pydicom = _dicom()
    ds = pydicom.dcmread(path)
    if ds.SOPClassUID != SEGMENTATION_STORAGE:
        raise ValueError(f"labels .dcm must be a DICOM Segmentation, SOP class is {ds.SOPClassUID}")
    lower = [c.lower() for c in classes]
    segment_class = {}
    for item in ds.SegmentSequence:
        label = str(getattr(item, "SegmentLabel", "")).lower()
        value = lower.index(label) if label in lower else int(item.SegmentNumber)
        if not 0 < value < len(classes):
            raise ValueError(f"segment {item.SegmentNumber} ('{label}') matches no class")
        segment_class[int(item.SegmentNumber)] = value
    frames = ds.pixel_array
    frames = frames.reshape((-1,) + frames.shape[-2:])
    if getattr(ds, "SegmentationType", "BINARY") == "FRACTIONAL":
        frames = frames >= 0.5 * float(getattr(ds, "MaximumFractionalValue", 255))
    frames = frames > 0
    groups = ds.PerFrameFunctionalGroupsSequence
    planes = image_shape if len(image_shape) == 3 else (1,) + tuple(image_shape)
    labels = np.zeros(planes, dtype=np.int64)
    covered = np.zeros(planes, dtype=bool)
    uids = [s.SOPInstanceUID for s in series] if series else []
    for index, group in enumerate(groups):
        segment = int(group.SegmentIdentificationSequence[0].ReferencedSegmentNumber)
        plane = 0
        if series:
            reference = None
            for derivation in getattr(group, "DerivationImageSequence", []):
                for source in getattr(derivation, "SourceImageSequence", []):
                    reference = source.ReferencedSOPInstanceUID
            if reference is None or reference not in uids:
                raise ValueError(f"frame {index + 1} references no slice of the image series")
            plane = uids.index(reference)
        if frames[index].shape != planes[1:]:
            raise ValueError(f"frame {index + 1} is {frames[index].shape}, image plane is {planes[1:]}")
        overlap = covered[plane] & frames[index]
        if overlap.any():
            raise ValueError(f"frame {index + 1}: {int(overlap.sum())} pixels lie in two segments")
        labels[plane][frames[index]] = segment_class[segment]
        covered[plane] |= frames[index]
    return labels if len(image_shape) == 3 else labels[0]


# MARK: - Cases

def _entries(folder: Path, forms: tuple, folders_allowed: bool) -> dict:
    """Case name -> its file (or series folder); two forms of one case are a set-level error."""
    found = {}
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            if not folders_allowed:
                continue
            case = entry.name
        elif entry.suffix.lower() in forms:
            case = entry.name[:-len(entry.suffix)]
        else:
            continue
        if case in found:
            raise SetError(f"{folder.parent}: {case}: ambiguous: two files for one case "
                           f"({found[case].relative_to(folder.parent)}, {entry.relative_to(folder.parent)})")
        found[case] = entry
    return found


def check_case(folder: Path, case: str, image_path: Path, label_path: Path, description: dict) -> dict:
    classes = description["classes"]
    series = None
    try:
        if image_path.is_dir():
            image, series = read_series(image_path)
        elif image_path.suffix.lower() == ".dcm":
            image = read_dicom_image(image_path)
        elif image_path.suffix.lower() == ".png":
            image = read_png(image_path, single_channel=False)
        else:
            image, _ = read_h5(image_path, "/image")
            if image.ndim not in (2, 3) or (image.ndim == 3 and image.shape[0] not in (1, 3)):
                raise ValueError(f"/image must be (rows, columns) or (channels, rows, columns) with 1 or 3 "
                                 f"channels, is {image.shape}")
    except Exception as error:  # any decoder failure is this case's problem
        raise CaseError(case, f"unreadable: {image_path.relative_to(folder)}: {error}") from None
    if image_path.is_dir():
        plane_shape = image.shape                                   # (slices, rows, columns)
    elif image_path.suffix.lower() == ".h5":
        plane_shape = image.shape[-2:]                              # channels first
    elif image_path.suffix.lower() == ".dcm" and image.ndim == 3 and image.shape[-1] != 3:
        plane_shape = image.shape                                   # multi-frame
    else:
        plane_shape = image.shape[:2]                               # PNG and DICOM RGB: channels last
    try:
        if label_path.suffix.lower() == ".png":
            label = read_png(label_path, single_channel=True)
        elif label_path.suffix.lower() == ".h5":
            label, _ = read_h5(label_path, "/labels")
            if not np.issubdtype(label.dtype, np.integer):
                raise ValueError(f"/labels must be an integer type, is {label.dtype}")
            if label.ndim == 3 and label.shape[0] == 1 and len(plane_shape) == 2:
                label = label[0]
        else:
            label = read_segmentation(label_path, classes, plane_shape, series)
    except Exception as error:
        raise CaseError(case, f"unreadable: {label_path.relative_to(folder)}: {error}") from None
    if tuple(label.shape) != tuple(plane_shape):
        raise CaseError(case, f"shape mismatch: image {tuple(plane_shape)} "
                              f"({image_path.relative_to(folder)}), label {tuple(label.shape)}")
    values, counts = np.unique(label, return_counts=True)
    outside = [(int(v), int(c)) for v, c in zip(values, counts) if v < 0 or v >= len(classes)]
    if outside:
        value, count = outside[0]
        raise CaseError(case, f"label outside classes: value {value} in {count} pixels is outside the "
                              f"{len(classes)} classes (0…{len(classes) - 1})")
    return {"counts": np.bincount(label.astype(np.int64).ravel(), minlength=len(classes)),
            "bytes": sum(p.stat().st_size for p in ([*image_path.rglob("*")] if image_path.is_dir()
                                                     else [image_path]) + [label_path] if p.is_file())}


def check_set(folder: Path, skip_bad: bool, quiet: bool) -> bool:
    description = read_description(folder)
    for sub in ("images", "labels"):
        if not (folder / sub).is_dir():
            raise SetError(f"{folder / sub}: missing folder")
    images = _entries(folder / "images", IMAGE_FORMS, folders_allowed=True)
    labels = _entries(folder / "labels", LABEL_FORMS, folders_allowed=False)
    problems: list[CaseError] = []
    bad = set()
    for case in sorted(set(images) - set(labels)):
        problems.append(CaseError(case, f"unpaired image: {images[case].relative_to(folder)} has no label in "
                                        f"labels/"))
        bad.add(case)
    for case in sorted(set(labels) - set(images)):
        problems.append(CaseError(case, f"unpaired label: {labels[case].relative_to(folder)} has no image in "
                                        f"images/"))
        bad.add(case)
    membership: dict[str, list[str]] = {}
    for split, cases in description["splits"].items():
        for case in cases:
            membership.setdefault(case, []).append(split)
    warnings = [f"{case}: name has characters other than letters, digits, '.', '_', '-'"
                for case in membership if not CASE_NAME.match(case)]
    for case, splits in membership.items():
        if case in bad:
            continue
        if len(splits) > 1:
            where = " and ".join(splits)
            problems.append(CaseError(case, f"case in two splits ({where})" if len(set(splits)) > 1
                                      else f"listed {len(splits)} times in split {splits[0]}"))
            bad.add(case)
        elif case not in images:
            problems.append(CaseError(case, f"missing case: split {splits[0]} lists it but images/ and labels/ "
                                            f"hold no file for it"))
            bad.add(case)
    unlisted = sorted(set(images) & set(labels) - set(membership))
    totals = {split: np.zeros(len(description["classes"]), dtype=np.int64) for split in description["splits"]}
    kept = {split: 0 for split in description["splits"]}
    total_bytes = 0
    for case, splits in membership.items():
        if case in bad:
            continue
        try:
            result = check_case(folder, case, images[case], labels[case], description)
        except CaseError as error:
            problems.append(error)
            continue
        kept[splits[0]] += 1
        totals[splits[0]] += result["counts"]
        total_bytes += result["bytes"]
    for warning in warnings:
        print(f"{folder}: warning: {warning}", file=sys.stderr)
    for problem in problems:
        print(f"{folder}: {'skipped ' if skip_bad else ''}{problem}", file=sys.stderr)
    if problems and not skip_bad:
        return False
    empty = [split for split, count in kept.items() if count == 0 and description["splits"][split]]
    if empty:
        print(f"{folder}: split(s) {', '.join(empty)} left with no valid case", file=sys.stderr)
        return False
    if not quiet:
        print(f"{folder}: {description['name']} ({description['modality']}), classes {description['classes']}")
        for split, count in kept.items():
            fractions = totals[split] / max(int(totals[split].sum()), 1)
            print(f"  {split}: {count} cases, class fractions "
                  + ", ".join(f"{name} {f:.4f}" for name, f in zip(description["classes"], fractions)))
        print(f"  {sum(kept.values())} valid cases, {len(problems)} skipped, {len(unlisted)} paired cases in no "
              f"split (ignored), {total_bytes / 1e6:.2f} MB of images and labels: OK")
    return True


# MARK: - nnU-Net v2 raw datasets

#: Geometry tolerance (spacing, origin, direction) between an image's channels and its label, and between readers.
GEOMETRY_TOLERANCE = 1e-4


def is_nnunet(folder: Path) -> bool:
    """True when folder/dataset.json is an nnU-Net v2 description (it has channel_names and file_ending)."""
    try:
        description = json.loads((folder / "dataset.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(description, dict) and "channel_names" in description and "file_ending" in description


def read_nnunet_description(folder: Path) -> dict:
    """dataset.json as nnU-Net v2 requires it: channel_names {"0": name, …}, labels {name: value} with the values
    0 … n-1 (background 0), numTraining, file_ending (.nii.gz, .nii or .png here)."""
    path = folder / "dataset.json"
    description = json.loads(path.read_text(encoding="utf-8"))
    for key, kind in (("channel_names", dict), ("labels", dict), ("numTraining", int), ("file_ending", str)):
        if not isinstance(description.get(key), kind) or isinstance(description.get(key), bool):
            raise SetError(f"{path}: '{key}' must be a{'n' if kind is int else ''} {kind.__name__}")
    channels = description["channel_names"]
    if sorted(channels) != [str(i) for i in range(len(channels))] or not channels:
        raise SetError(f"{path}: channel_names keys must be \"0\" … \"{len(channels) - 1}\", "
                       f"got {sorted(channels)}")
    values = description["labels"].values()
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values) \
            or sorted(values) != list(range(len(values))) or description["labels"].get("background") != 0:
        raise SetError(f"{path}: labels must map names to the integers 0 … n-1 with background 0, got "
                       f"{description['labels']!r}")
    if description["file_ending"] not in (".nii.gz", ".nii", ".png"):
        raise SetError(f"{path}: file_ending {description['file_ending']!r} is not one this checker reads "
                       f"(.nii.gz, .nii, .png)")
    return description


def _nnunet_files(folder: Path, ending: str, channels: int | None) -> tuple[dict, list[str]]:
    """Case -> {channel: path} (images, channels given) or case -> path (labels), and the names that fit neither
    pattern."""
    found, strays = {}, []
    if not folder.is_dir():
        return found, strays
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or not entry.is_file():
            continue
        if not entry.name.endswith(ending):
            strays.append(entry.name)
            continue
        stem = entry.name[:-len(ending)]
        if channels is None:
            found[stem] = entry
            continue
        match = re.fullmatch(r"(.+)_(\d{4})", stem)
        if not match or int(match.group(2)) >= channels:
            strays.append(entry.name)
            continue
        found.setdefault(match.group(1), {})[int(match.group(2))] = entry
    return found, strays


def _geometry_itk(path: Path):
    """(array in z, y, x order, spacing x y z, origin, direction) as SimpleITK (nnU-Net's reader) reads it."""
    import SimpleITK as sitk
    image = sitk.ReadImage(str(path))
    return (sitk.GetArrayFromImage(image), np.array(image.GetSpacing()), np.array(image.GetOrigin()),
            np.array(image.GetDirection()))


def _nibabel_agrees(path: Path, array: np.ndarray, spacing, origin, direction) -> str | None:
    """None when nibabel's array and affine (RAS, turned to LPS) agree with SimpleITK's, else the cause."""
    import nibabel
    image = nibabel.load(str(path))
    affine = np.diag([-1.0, -1.0, 1.0, 1.0]) @ image.affine                      # RAS -> LPS
    columns = affine[:3, :3]
    nib_spacing = np.linalg.norm(columns, axis=0)
    nib_direction = (columns / nib_spacing).ravel()
    for what, ours, theirs in (("spacing", nib_spacing, spacing), ("origin", affine[:3, 3], origin),
                               ("direction", nib_direction, direction)):
        if ours.shape != theirs.shape or not np.allclose(ours, theirs, rtol=0, atol=GEOMETRY_TOLERANCE):
            return f"nibabel's {what} {np.round(ours, 6).tolist()} differs from SimpleITK's " \
                   f"{np.round(theirs, 6).tolist()}"
    data = np.asanyarray(image.dataobj)
    if data.ndim == 3 and not np.array_equal(np.transpose(data, (2, 1, 0)), array):
        return "nibabel's voxels differ from SimpleITK's"
    return None


def check_nnunet_case(folder: Path, case: str, images: dict, label: Path, description: dict) -> dict:
    """One case: every channel readable, no NaN, channels and label on one grid (shape, spacing, origin,
    direction within GEOMETRY_TOLERANCE), label values declared; for NIfTI nibabel must agree with SimpleITK."""
    nifti = description["file_ending"] != ".png"
    values = sorted(description["labels"].values())
    grids = []
    for channel, path in sorted(images.items()) + [("label", label)]:
        try:
            if nifti:
                array, spacing, origin, direction = _geometry_itk(path)
                disagreement = _nibabel_agrees(path, array, spacing, origin, direction)
                if disagreement:
                    raise CaseError(case, f"{path.relative_to(folder)}: {disagreement}")
            else:
                array = read_png(path, single_channel=channel == "label")
                spacing = origin = direction = np.zeros(0)
        except CaseError:
            raise
        except Exception as error:
            raise CaseError(case, f"unreadable: {path.relative_to(folder)}: {error}") from None
        grids.append((path, array.shape if nifti or channel == "label" else array.shape[:2], spacing, origin,
                      direction))
        if channel != "label" and np.issubdtype(array.dtype, np.floating) and np.isnan(array).any():
            raise CaseError(case, f"{path.relative_to(folder)}: image holds NaN values")
        if channel == "label":
            labels = array
    reference = grids[-1]
    for path, shape, spacing, origin, direction in grids[:-1]:
        if tuple(shape) != tuple(reference[1]):
            raise CaseError(case, f"shape mismatch: {path.relative_to(folder)} {tuple(shape)}, label "
                                  f"{tuple(reference[1])}")
        for what, ours, theirs in (("spacing", spacing, reference[2]), ("origin", origin, reference[3]),
                                   ("direction", direction, reference[4])):
            if not np.allclose(ours, theirs, rtol=0, atol=GEOMETRY_TOLERANCE):
                raise CaseError(case, f"geometry mismatch: {path.relative_to(folder)} {what} "
                                      f"{np.round(ours, 6).tolist()}, label {np.round(theirs, 6).tolist()}")
    found = np.unique(labels)
    if not np.all(np.isin(found, values)):
        raise CaseError(case, f"label outside classes: value(s) {sorted(set(found.tolist()) - set(values))} in "
                              f"{label.relative_to(folder)} are not among the declared {values}")
    return {"counts": np.bincount(labels.astype(np.int64).ravel(), minlength=len(values)),
            "shape": tuple(int(n) for n in labels.shape), "spacing": tuple(float(v) for v in reference[2]),
            "bytes": sum(p.stat().st_size for p in [*images.values(), label])}


def check_splits_final(folder: Path, training: set) -> list[str]:
    """splits_final.json beside dataset.json (optional): nnU-Net's list of folds {"train": [...], "val": [...]}
    over training cases, train and val disjoint in each fold."""
    path = folder / "splits_final.json"
    if not path.is_file():
        return []
    try:
        folds = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        return [f"{path.name}: not valid JSON: {error}"]
    if not isinstance(folds, list) or not folds or not all(
            isinstance(f, dict) and isinstance(f.get("train"), list) and isinstance(f.get("val"), list)
            for f in folds):
        return [f"{path.name}: must be a list of folds, each {{\"train\": [...], \"val\": [...]}}"]
    problems = []
    for index, fold in enumerate(folds):
        unknown = sorted(set(fold["train"] + fold["val"]) - training)
        if unknown:
            problems.append(f"{path.name}: fold {index} lists {unknown[:5]} which are not training cases")
        both = sorted(set(fold["train"]) & set(fold["val"]))
        if both:
            problems.append(f"{path.name}: fold {index} has {both[:5]} in both train and val")
    return problems


def check_nnunet_set(folder: Path, skip_bad: bool, quiet: bool) -> bool:
    """imagesTr/labelsTr (numTraining cases), optional imagesTs with optional labelsTs (a labeled test split),
    optional splits_final.json; every problem is printed, by case."""
    description = read_nnunet_description(folder)
    ending = description["file_ending"]
    channels = len(description["channel_names"])
    classes = [name for name, _ in sorted(description["labels"].items(), key=lambda item: item[1])]
    problems: list[str] = []
    results = {}
    training: set = set()
    layout = (("train", "imagesTr", "labelsTr"), ("test", "imagesTs", "labelsTs"))
    for split, images_folder, labels_folder in layout:
        if split == "train" and not (folder / images_folder).is_dir():
            raise SetError(f"{folder / images_folder}: missing folder")
        images, strays = _nnunet_files(folder / images_folder, ending, channels)
        if split == "test" and not (folder / labels_folder).is_dir():
            results[split] = {"unlabeled": len(images)}
            continue
        labels, label_strays = _nnunet_files(folder / labels_folder, ending, None)
        problems += [f"{images_folder}/{name}: not <case>_<XXXX>{ending} with a channel below {channels}"
                     for name in strays]
        problems += [f"{labels_folder}/{name}: not <case>{ending}" for name in label_strays]
        problems += [f"{case}: unpaired image: {images_folder} has it, {labels_folder} has no {case}{ending}"
                     for case in sorted(set(images) - set(labels))]
        problems += [f"{case}: unpaired label: {labels_folder}/{case}{ending} has no image in {images_folder}"
                     for case in sorted(set(labels) - set(images))]
        for case in sorted(set(images) & set(labels)):
            missing = sorted(set(range(channels)) - set(images[case]))
            if missing:
                problems.append(f"{case}: missing channel(s) {missing} ({case}_{missing[0]:04d}{ending})")
                continue
            try:
                results.setdefault(split, {})[case] = check_nnunet_case(folder, case, images[case], labels[case],
                                                                        description)
            except CaseError as error:
                problems.append(str(error))
        if split == "train":
            training = set(images) & set(labels)
            if len(images) != description["numTraining"]:
                problems.append(f"dataset.json: numTraining is {description['numTraining']}, {images_folder} "
                                f"holds {len(images)} cases")
    problems += check_splits_final(folder, training)
    for problem in problems:
        print(f"{folder}: {'skipped ' if skip_bad else ''}{problem}", file=sys.stderr)
    if problems and not skip_bad:
        return False
    if not results.get("train"):
        print(f"{folder}: no valid training case", file=sys.stderr)
        return False
    if not quiet:
        print(f"{folder}: {description.get('name', folder.name)} (nnU-Net v2 raw, {channels} channel(s) "
              f"{list(description['channel_names'].values())}), classes {classes}")
        total = 0
        for split, cases in results.items():
            if "unlabeled" in cases:
                print(f"  {split}: {cases['unlabeled']} unlabeled cases (imagesTs/ without labelsTs/)")
                continue
            counts = sum(r["counts"] for r in cases.values())
            shapes = np.array([r["shape"] for r in cases.values()])
            spacings = np.array([r["spacing"] for r in cases.values()])
            total += sum(r["bytes"] for r in cases.values())
            print(f"  {split}: {len(cases)} cases, shapes (z, y, x) {shapes.min(0).tolist()} … "
                  f"{shapes.max(0).tolist()}, spacing (x, y, z) mm "
                  f"{np.round(spacings.min(0), 3).tolist()} … {np.round(spacings.max(0), 3).tolist()}, "
                  f"class fractions "
                  + ", ".join(f"{name} {c / counts.sum():.4f}" for name, c in zip(classes, counts)))
        folds = "no splits_final.json" if not (folder / "splits_final.json").is_file() else "splits_final.json OK"
        print(f"  {folds}, {len(problems)} problem(s), {total / 1e6:.2f} MB of images and labels: OK")
    return True


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sets", nargs="+", type=Path, help="labeled-set folders")
    parser.add_argument("--skip-bad", action="store_true", help="list bad cases and go on with the rest")
    parser.add_argument("--quiet", action="store_true", help="print problems only")
    args = parser.parse_args(argv)
    ok = True
    for folder in args.sets:
        try:
            check = check_nnunet_set if is_nnunet(folder) else check_set
            ok = check(folder, args.skip_bad, args.quiet) and ok
        except SetError as error:
            print(f"{error}", file=sys.stderr)
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
