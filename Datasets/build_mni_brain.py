#!/usr/bin/env python3
"""Builds the `mni-brain` labeled set: axial slices of the MNI ICBM152 2009a T1 template (read from the
pinned nilearn wheel, the only download) as DICOM MR images with 0 background/CSF, 1 gray matter, 2 white
matter PNG label maps. Train and val come from simulated scanner A, test from scanner B (noise, bias field,
contrast and resolution changes). Deterministic for a given --seed.

    python Datasets/build_mni_brain.py [--out Datasets/cache/mni-brain] [--seed 20260401]
"""

from __future__ import annotations

import sys

from datasetlib.dicomio import SeriesIdentity
from datasetlib.cli import builder_main
from datasetlib.labeledset import SetSpec
from datasetlib.seeding import uid

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
    return builder_main(argv, __doc__, "mni-brain", DEFAULT_SEED, spec)


if __name__ == "__main__":
    sys.exit(main())
