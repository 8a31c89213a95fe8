"""Builds a labeled set in the SliceLab layout (see Datasets/README.md) from axial template slices:
images/<case>.dcm, labels/<case>.png, dataset.json; written to a temporary folder and renamed into place."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from PIL import Image

from . import acquisition
from .acquisition import Scanner
from .dicomio import SeriesIdentity, write_mr_slice
from .seeding import generator, uid
from .template import Template

#: Fraction of an axial slice (197 x 233 pixels) that must be gray or white matter for it to become a case.
MIN_TISSUE_FRACTION = 0.075
#: Split pattern along z, repeated: never two neighbouring slices of different splits (two-slice gaps).
SPLIT_PATTERN = ["train"] * 8 + [None] * 2 + ["val"] * 2 + [None] * 2 + ["test"] * 4 + [None] * 2
PREPROCESSING = {"normalize": "percentile", "low": 0.5, "high": 99.5}


@dataclass(frozen=True)
class CaseSlice:
    name: str
    k: int            # axial template slice index
    split: str


def case_slices(labels: np.ndarray) -> list[CaseSlice]:
    """Axial slices with at least MIN_TISSUE_FRACTION tissue, assigned to splits by SPLIT_PATTERN from the
    lowest such slice upwards (slices falling in a gap are not used)."""
    tissue = (labels > 0).sum(axis=(0, 1)) / (labels.shape[0] * labels.shape[1])
    usable = [k for k in range(labels.shape[2]) if tissue[k] >= MIN_TISSUE_FRACTION]
    first, last = usable[0], usable[-1]
    cases = []
    for k in range(first, last + 1):
        split = SPLIT_PATTERN[(k - first) % len(SPLIT_PATTERN)]
        if split is not None:
            cases.append(CaseSlice(name=f"axial{k:03d}", k=k, split=split))
    return cases


#: modify(case, anatomy, labels, gm, wm, rng) -> (anatomy, labels, case info) inserts pathology.
Modifier = Callable[[CaseSlice, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.random.Generator],
                    tuple[np.ndarray, np.ndarray, dict]]


@dataclass
class SetSpec:
    name: str
    description: str
    classes: list[str]
    seed: int
    identity: Callable[[CaseSlice], SeriesIdentity]
    modify: Modifier | None = None
    lesion_classes: list[str] | None = None


def _write_png_labels(path: Path, labels: np.ndarray) -> None:
    Image.fromarray(labels.astype(np.uint8), mode="L").save(path, format="PNG", optimize=False)


def _lps_position(template: Template, k: int) -> tuple:
    """Centre of the first transmitted pixel (row 0 = most anterior, column 0 = patient right) in LPS mm."""
    i, j = template.t1.shape[0] - 1, template.t1.shape[1] - 1
    x, y, z, _ = template.affine @ np.array([i, j, k, 1.0])
    return (float(-x), float(-y), float(z))


def tree_sha256(folder: Path) -> str:
    """sha256 over the sorted relative paths and contents of every file in folder."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def install(staging: Path, out_dir: Path) -> None:
    """Puts a finished staging folder in place of out_dir: renames any old out_dir away first, then deletes it,
    so out_dir is never half written."""
    if out_dir.exists():
        retired = out_dir.parent / f"{out_dir.name}.tmp-old-{os.getpid()}"
        out_dir.rename(retired)
        staging.rename(out_dir)
        shutil.rmtree(retired)
    else:
        staging.rename(out_dir)


def build_set(spec: SetSpec, template: Template, out_dir: Path, versions: dict) -> dict:
    """Builds the set into out_dir (replaced atomically) and returns its statistics."""
    started = time.monotonic()
    labels_volume = template.labels()
    cases = case_slices(labels_volume)
    scanners = {"train": acquisition.reference_scanner(), "val": acquisition.reference_scanner(),
                "test": acquisition.shifted_scanner(spec.seed)}
    staging = out_dir.parent / f"{out_dir.name}.tmp-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    (staging / "images").mkdir(parents=True)
    (staging / "labels").mkdir()
    class_pixels = {split: np.zeros(len(spec.classes), dtype=np.int64) for split in ("train", "val", "test")}
    case_info = {}
    instance_numbers = {}
    for index, case in enumerate(cases):
        scanner: Scanner = scanners[case.split]
        anatomy = acquisition.thick_slice(template.t1, case.k, scanner.slice_profile)
        labels = acquisition.axial_slice(labels_volume, case.k)
        info = {"slice": case.k}
        if spec.modify is not None:
            anatomy, labels, extra = spec.modify(
                case, anatomy, labels, acquisition.axial_slice(template.gm, case.k),
                acquisition.axial_slice(template.wm, case.k), generator(spec.seed, spec.name, "lesion", case.name))
            info.update(extra)
        physical = acquisition.acquire(anatomy, scanner, case.k, template.t1.shape[2],
                                       generator(spec.seed, spec.name, "noise", case.name))
        instance_numbers[case.split] = instance_numbers.get(case.split, 0) + 1
        identity = spec.identity(case)
        write_mr_slice(staging / "images" / f"{case.name}.dcm", physical, scanner, identity,
                       sop_instance_uid=uid(spec.seed, spec.name, "instance", case.name),
                       instance_number=1 if identity.single_instance else instance_numbers[case.split],
                       position_lps=_lps_position(template, case.k), pixel_spacing=(1.0, 1.0),
                       image_comments=f"SliceLab {spec.name} {case.split} {case.name}: MNI ICBM152 2009a "
                                      f"axial slice k={case.k}, simulated scanner {scanner.name}")
        _write_png_labels(staging / "labels" / f"{case.name}.png", labels)
        class_pixels[case.split] += np.bincount(labels.ravel(), minlength=len(spec.classes))[:len(spec.classes)]
        case_info[case.name] = info
        if (index + 1) % 20 == 0 or index + 1 == len(cases):
            print(f"  {spec.name}: {index + 1}/{len(cases)} cases", flush=True)

    splits = {split: [c.name for c in cases if c.split == split] for split in ("train", "val", "test")}
    dataset = {
        "name": spec.name,
        "classes": spec.classes,
        **({"lesion_classes": spec.lesion_classes} if spec.lesion_classes else {}),
        "modality": "MR",
        "splits": splits,
        "preprocessing": PREPROCESSING,
        "description": spec.description,
        "source": template.provenance,
        "builder": {"seed": spec.seed, "versions": versions,
                    "split_pattern": "repeating along z from the lowest slice with >= 7.5 % tissue: "
                                     "8 train, 2 gap, 2 val, 2 gap, 4 test, 2 gap"},
        "acquisition": {split: scanners[split].describe() for split in splits},
        "cases": case_info,
    }
    (staging / "dataset.json").write_text(json.dumps(dataset, indent=2) + "\n")
    digest = tree_sha256(staging)
    install(staging, out_dir)

    sizes = [p.stat().st_size for p in out_dir.rglob("*") if p.is_file()]
    fractions = {split: [round(float(v) / max(int(counts.sum()), 1), 4) for v in counts]
                 for split, counts in class_pixels.items()}
    return {"name": spec.name, "cases": {s: len(v) for s, v in splits.items()}, "class_fractions": fractions,
            "classes": spec.classes, "files": len(sizes), "bytes": int(sum(sizes)), "sha256": digest,
            "seconds": round(time.monotonic() - started, 2)}


def versions() -> dict:
    import nibabel
    import PIL
    import pydicom
    import scipy
    return {"python": sys.version.split()[0], "numpy": np.__version__, "scipy": scipy.__version__,
            "pydicom": pydicom.__version__, "nibabel": nibabel.__version__, "pillow": PIL.__version__}
