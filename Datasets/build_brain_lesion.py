#!/usr/bin/env python3
"""Builds the `brain-lesion` labeled set: the `mni-brain` slices and splits (same template, same simulated
scanners) with synthetic tumour-like lesions as class 3 (irregular outline, enhancing rim, necrotic core,
surrounding oedema, partial-volume edges); gray and white matter keep their labels elsewhere. Every case is
its own virtual patient (own study and series), since its lesion differs. Deterministic for a given --seed.

    python Datasets/build_brain_lesion.py [--out Datasets/cache/brain-lesion] [--seed 20260402]
"""

from __future__ import annotations

import sys

from datasetlib.dicomio import SeriesIdentity
from datasetlib.cli import builder_main
from datasetlib.labeledset import SetSpec
from datasetlib.lesions import insert_lesions
from datasetlib.seeding import uid

DEFAULT_SEED = 20260402
CLASSES = ["background", "gray matter", "white matter", "lesion"]


def spec(seed: int) -> SetSpec:
    def identity(case):
        return SeriesIdentity(patient_name=f"LESION^{case.name}", patient_id=f"BRAIN-LESION-{case.name}",
                              study_uid=uid(seed, "brain-lesion", "study", case.name),
                              series_uid=uid(seed, "brain-lesion", "series", case.name),
                              frame_of_reference_uid=uid(seed, "brain-lesion", "frame-of-reference", case.name),
                              series_number=1, study_description="SliceLab brain-lesion (synthetic lesions)",
                              single_instance=True)
    return SetSpec(name="brain-lesion", classes=CLASSES, lesion_classes=["lesion"], seed=seed, identity=identity,
                   modify=insert_lesions,
                   description="mni-brain slices with one or two synthetic tumour-like lesions each (class 3: "
                               "enhancing rim and necrotic core where the covered fraction is >= 0.5; the "
                               "surrounding T1-hypointense oedema keeps its tissue label). Test split acquired "
                               "by a simulated second scanner.")


def main(argv=None) -> int:
    return builder_main(argv, __doc__, "brain-lesion", DEFAULT_SEED, spec)


if __name__ == "__main__":
    sys.exit(main())
