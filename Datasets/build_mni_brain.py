#!/usr/bin/env python3
"""Builds the `mni-brain` labeled set: axial slices of the MNI ICBM152 2009a T1 template (read from the
pinned nilearn wheel, the only download) as DICOM MR images with 0 background/CSF, 1 gray matter, 2 white
matter PNG label maps. Train and val come from simulated scanner A, test from scanner B (noise, bias field,
contrast and resolution changes). Deterministic for a given --seed.

    python Datasets/build_mni_brain.py [--out Datasets/cache/mni-brain] [--seed 20260401]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from datasetlib.dicomio import SeriesIdentity
from datasetlib.labeledset import SetSpec, build_set, versions
from datasetlib.preview import render
from datasetlib.seeding import uid
from datasetlib.template import load_template

HERE = Path(__file__).resolve().parent
DEFAULT_SEED = 20260401
CLASSES = ["background", "gray matter", "white matter"]
SERIES_NUMBERS = {"train": 1, "val": 2, "test": 3}


def spec(seed: int) -> SetSpec:
    """One subject (the template) and one study; one series per split (each split is one acquisition)."""
    def identity(case):
        return SeriesIdentity(patient_name="MNI152^ICBM2009a", patient_id="MNI152-2009A",
                              study_uid=uid(seed, "mni-brain", "study"),
                              series_uid=uid(seed, "mni-brain", "series", case.split),
                              frame_of_reference_uid=uid(seed, "mni-brain", "frame-of-reference"),
                              series_number=SERIES_NUMBERS[case.split],
                              study_description="SliceLab mni-brain (MNI ICBM152 2009a)")
    return SetSpec(name="mni-brain", classes=CLASSES, seed=seed, identity=identity,
                   description="Axial 1 mm slices of the MNI ICBM152 2009a nonlinear symmetric T1 template; "
                               "labels from its GM/WM probability maps (class of maximum probability >= 0.5). Test "
                               "split acquired by a simulated second scanner.")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HERE / "cache" / "mni-brain")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--wheels", type=Path, default=HERE / "cache" / "wheels")
    parser.add_argument("--previews", default=str(HERE / "cache" / "previews"),
                        help="folder for a few rendered image|overlay PNGs ('' for none)")
    args = parser.parse_args(argv)
    template = load_template(args.wheels)
    stats = build_set(spec(args.seed), template, args.out, versions())
    print(json.dumps(stats, indent=2))
    if args.previews:
        previews = Path(args.previews)
        splits = json.loads((args.out / "dataset.json").read_text())["splits"]
        for split in ("train", "test"):
            for case in (splits[split][len(splits[split]) // 3], splits[split][2 * len(splits[split]) // 3]):
                render(args.out, case, previews / args.out.name / f"{split}-{case}.png")
        print(f"previews in {previews / args.out.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
