#!/usr/bin/env python3
"""Builds `mni-brain-3d`, an nnU-Net v2 raw dataset of 3-D T1 MR volumes simulated from the MNI ICBM152 2009a
template and its gray/white-matter maps (read from the pinned nilearn wheel, the only download). Each case has
its own smooth deformation (affine plus elastic), anisotropic grid (about 1 x 1 x 3 mm), bias field, contrast
change and Rician noise; labels 0 background/CSF, 1 gray matter, 2 white matter through the same deformation.
Training cases go to imagesTr/labelsTr with nnU-Net's own 5-fold splits_final.json; test cases to
imagesTs/labelsTs. Deterministic for a given --seed (byte-identical rebuilds).

    python Datasets/build_mni_brain_3d.py [--out Datasets/cache/mni-brain-3d] [--seed 20261201]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

import nibabel
import numpy as np

from datasetlib import volume3d
from datasetlib.labeledset import install, tree_sha256, versions
from datasetlib.seeding import generator
from datasetlib.template import load_template

DATASETS = Path(__file__).resolve().parent
DEFAULT_SEED = 20261201
NAME = "mni-brain-3d"
CLASSES = ["background", "gray matter", "white matter"]
TRAINING_CASES = 30
TEST_CASES = 10
#: nnU-Net's default cross-validation: 5 folds, sklearn KFold(shuffle=True, random_state=12345) on sorted ids.
FOLDS, NNUNET_SPLIT_SEED = 5, 12345


def case_name(index: int) -> str:
    return f"mnib3d_{index:03d}"


def nnunet_splits(identifiers: list[str], seed: int = NNUNET_SPLIT_SEED, folds: int = FOLDS) -> list[dict]:
    """The splits nnU-Net v2 writes when it finds no splits_final.json (`generate_crossval_split`: sklearn's
    KFold(n_splits=5, shuffle=True, random_state=12345) over the sorted case ids), reproduced without sklearn:
    a RandomState(seed) shuffle of the indices, consecutive folds, the first n % folds one case larger."""
    keys = sorted(identifiers)
    indices = np.arange(len(keys))
    np.random.RandomState(seed).shuffle(indices)
    sizes = np.full(folds, len(keys) // folds, dtype=int)
    sizes[:len(keys) % folds] += 1
    splits, start = [], 0
    for size in sizes:
        held_out = set(indices[start:start + size].tolist())
        start += size
        splits.append({"train": [keys[i] for i in range(len(keys)) if i not in held_out],
                       "val": [keys[i] for i in range(len(keys)) if i in held_out]})
    return splits


def write_nifti(path: Path, data: np.ndarray, affine: np.ndarray, description: str) -> None:
    """Writes data with affine as both sform and qform (code 1, scanner), millimetre units, the array's own
    datatype, unscaled (nibabel stores scl_slope as NaN then, which nifti_clib, ITK and nibabel read as 1)."""
    image = nibabel.Nifti1Image(data, affine)
    image.header.set_data_dtype(data.dtype)
    image.header.set_xyzt_units("mm")
    image.header["descrip"] = description.encode()[:79]
    image.set_sform(affine, code=1)
    image.set_qform(affine, code=1)
    image.to_filename(str(path))


def summary(per_case: dict, cases: list[str]) -> dict:
    """Min, median and max over cases of each foreground class's voxels, volume, thickness; the smallest
    structure (fewest voxels of a class in a case, smallest component, thinnest 5th-percentile thickness)."""
    result = {}
    for name in CLASSES[1:]:
        rows = [per_case[c]["classes"][name] for c in cases]

        def spread(key):
            values = np.array([r[key] for r in rows], dtype=float)
            return {"min": float(values.min()), "median": float(np.median(values)), "max": float(values.max())}

        fewest = min(cases, key=lambda c: per_case[c]["classes"][name]["voxels"])
        result[name] = {"voxels": spread("voxels"), "volume_ml": spread("volume_ml"),
                        "components": spread("components"),
                        "thickness_mm_median": spread("thickness_mm_median"),
                        "thickness_mm_p5": spread("thickness_mm_p5"),
                        "smallest_case": {"case": fewest, "voxels": per_case[fewest]["classes"][name]["voxels"]},
                        "smallest_component_voxels": int(min(r["smallest_component_voxels"] for r in rows))}
    return result


def build(out_dir: Path, seed: int, wheels: Path) -> dict:
    started = time.monotonic()
    template = load_template(wheels)
    centre = volume3d.brain_centre(template)
    staging = out_dir.parent / f"{out_dir.name}.tmp-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    for sub in ("imagesTr", "labelsTr", "imagesTs", "labelsTs"):
        (staging / sub).mkdir(parents=True)
    names = [case_name(i) for i in range(1, TRAINING_CASES + TEST_CASES + 1)]
    training, test = names[:TRAINING_CASES], names[TRAINING_CASES:]
    per_case = {}
    for index, case in enumerate(names):
        split = "train" if case in training else "test"
        parameters = volume3d.draw_parameters(generator(seed, NAME, "parameters", case))
        simulated = volume3d.simulate(template, centre, parameters, generator(seed, NAME, "simulation", case))
        images, labels = ("imagesTr", "labelsTr") if split == "train" else ("imagesTs", "labelsTs")
        write_nifti(staging / images / f"{case}_0000.nii.gz", simulated.image, simulated.affine,
                    f"SliceLab {NAME} {case} T1 (simulated)")
        write_nifti(staging / labels / f"{case}.nii.gz", simulated.labels, simulated.affine,
                    f"SliceLab {NAME} {case} labels")
        per_case[case] = {"split": split, **parameters.describe(), **simulated.info,
                          "classes": volume3d.class_statistics(simulated.labels, parameters.spacing_mm, CLASSES)}
        print(f"  {NAME}: {index + 1}/{len(names)} {case} {split} shape {simulated.info['shape']} spacing "
              f"{list(parameters.spacing_mm)} ({time.monotonic() - started:.0f} s)", flush=True)

    dataset = {
        "channel_names": {"0": "T1"},
        "labels": {name: value for value, name in enumerate(CLASSES)},
        "numTraining": len(training),
        "file_ending": ".nii.gz",
        "name": NAME,
        "description": "3-D T1 MR simulated from the MNI ICBM152 2009a nonlinear symmetric template: per case a "
                       "smooth deformation, an anisotropic grid (about 1 x 1 x 3 mm), a coil bias field, a "
                       "contrast change and Rician noise. Labels from the template's GM/WM maps through the same "
                       "deformation. Test cases (imagesTs/, labelsTs/) are held out of splits_final.json.",
        "reference": "Fonov et al., NeuroImage 54 (2011); template from the nilearn 0.14.1 wheel",
        "builder": {"script": "Datasets/build_mni_brain_3d.py", "seed": seed, "versions": versions(),
                    "source": template.provenance, "provenance": "provenance.json"},
    }
    (staging / "dataset.json").write_text(json.dumps(dataset, indent=2) + "\n")
    splits = nnunet_splits(training)
    (staging / "splits_final.json").write_text(json.dumps(splits, indent=4) + "\n")
    statistics = {"train": summary(per_case, training), "test": summary(per_case, test),
                  "all": summary(per_case, names)}
    provenance = {"name": NAME, "seed": seed, "splits": {"train": training, "test": test},
                  "simulation": {"field_of_view_mm": list(volume3d.FIELD_OF_VIEW_MM),
                                 "control_spacing_mm": volume3d.CONTROL_SPACING_MM,
                                 "slice_profile_samples": volume3d.SLICE_PROFILE_SAMPLES,
                                 "tissue_threshold": volume3d.TISSUE_THRESHOLD,
                                 "brain_centre_ras_mm": [round(float(v), 3) for v in centre]},
                  "class_statistics": statistics, "cases": per_case}
    (staging / "provenance.json").write_text(json.dumps(provenance, indent=2) + "\n")
    digest = tree_sha256(staging)
    install(staging, out_dir)
    files = [p for p in out_dir.rglob("*") if p.is_file()]
    shapes = np.array([per_case[c]["shape"] for c in names])
    return {"name": NAME, "cases": {"train": len(training), "test": len(test)},
            "folds": [{"train": len(s["train"]), "val": len(s["val"])} for s in splits],
            "shape_min": shapes.min(axis=0).tolist(), "shape_max": shapes.max(axis=0).tolist(),
            "class_statistics": statistics["all"], "files": len(files),
            "bytes": int(sum(p.stat().st_size for p in files)), "sha256": digest,
            "seconds": round(time.monotonic() - started, 1)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DATASETS / "cache" / NAME)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--wheels", type=Path, default=DATASETS / "cache" / "wheels")
    args = parser.parse_args(argv)
    print(json.dumps(build(args.out, args.seed, args.wheels), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
