#!/usr/bin/env python3
"""Copies a handful of test and training cases of built sets into the bundled demo sets
`Sources/SliceLabKit/Resources/Demo/<set>/`:
images, labels and a dataset.json whose `test` and `train` splits list them (`val` empty), keeping the
provenance of the full set. The 3-D set `mni-brain-3d` (nnU-Net v2 layout) becomes one held-out test case and
two training cases (for the classical baseline's majority-vote mapping), each a slab of `--slices` slices
around its middle, cut with nibabel so that every slab keeps its geometry (the affine's origin moves to the
slab's first slice). Run after `make datasets`:

    python Datasets/make_demo.py [--count 6] [--train-count 4] [--sets mni-brain brain-lesion mni-brain-3d]

The demo sets are package resources of the SliceLab target, so `slicelab demo` finds them from any folder.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def spread(cases: list[str], count: int, source: Path, split: str) -> list[str]:
    """`count` cases spread evenly along z."""
    if len(cases) < count:
        raise SystemExit(f"{source}: {split} split has {len(cases)} cases, fewer than {count}")
    step = len(cases) / count
    return [cases[int(step * i + step / 2)] for i in range(count)]


def make_demo(source: Path, destination: Path, count: int, train_count: int) -> list[str]:
    description = json.loads((source / "dataset.json").read_text())
    chosen = spread(description["splits"]["test"], count, source, "test")
    train = spread(description["splits"]["train"], train_count, source, "train") if train_count else []
    staging = destination.parent / f"{destination.name}.tmp-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "images").mkdir(parents=True)
    (staging / "labels").mkdir()
    for case in train + chosen:
        shutil.copy2(source / "images" / f"{case}.dcm", staging / "images" / f"{case}.dcm")
        shutil.copy2(source / "labels" / f"{case}.png", staging / "labels" / f"{case}.png")
    description["splits"] = {"train": train, "val": [], "test": chosen}
    description["cases"] = {case: description["cases"][case] for case in train + chosen}
    description["description"] = (f"Demo subset ({count} test cases, {train_count} training cases for the classical "
                                  f"baseline's majority-vote mapping) of the {description['name']} set built by "
                                  f"Datasets/build_*.py; see Datasets/README.md. " + description["description"])
    description["acquisition"] = {split: description["acquisition"][split] for split in ("train", "test")
                                  if split in description["acquisition"]}
    (staging / "dataset.json").write_text(json.dumps(description, indent=2) + "\n")
    shutil.rmtree(destination, ignore_errors=True)
    staging.rename(destination)
    return chosen


def slab(source: Path, destination: Path, slices: int) -> None:
    """The `slices` middle slices (third NIfTI axis) of `source`, written to `destination` with their geometry."""
    import nibabel as nib

    image = nib.load(str(source))
    depth = image.shape[2]
    if depth < slices:
        raise SystemExit(f"{source}: {depth} slices, fewer than {slices}")
    start = (depth - slices) // 2
    part = image.slicer[:, :, start:start + slices]
    part.set_qform(part.affine, code=int(image.header["qform_code"]))
    part.set_sform(part.affine, code=int(image.header["sform_code"]))
    nib.save(part, str(destination))


def make_demo_3d(source: Path, destination: Path, train_count: int, slices: int) -> list[str]:
    """One held-out test case and `train_count` training cases of an nnU-Net set, as slabs."""
    description = json.loads((source / "dataset.json").read_text())
    ending = description["file_ending"]
    test_cases = sorted(p.name[: -len(ending)] for p in (source / "labelsTs").glob("*" + ending))
    train_cases = json.loads((source / "splits_final.json").read_text())[0]["train"]
    chosen = test_cases[:1]
    train = spread(train_cases, train_count, source, "train")
    staging = destination.parent / f"{destination.name}.tmp-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    for images, labels, cases in (("imagesTr", "labelsTr", train), ("imagesTs", "labelsTs", chosen)):
        (staging / images).mkdir(parents=True)
        (staging / labels).mkdir()
        for case in cases:
            for channel in sorted((source / images).glob(f"{case}_*{ending}")):
                slab(channel, staging / images / channel.name, slices)
            slab(source / labels / f"{case}{ending}", staging / labels / f"{case}{ending}", slices)
    # Fold 0 trains on the first training case and validates on the rest (unused by the demo, which scores the
    # held-out test case).
    (staging / "splits_final.json").write_text(json.dumps([{"train": train[:1], "val": train[1:]}], indent=4) + "\n")
    description["numTraining"] = len(train)
    description["description"] = (f"Demo subset of the {description['name']} set built by Datasets/build_mni_brain_3d.py "
                                  f"(one held-out test case and {len(train)} training cases, each the {slices} middle "
                                  f"slices of its volume); see Datasets/README.md. " + description["description"])
    (staging / "dataset.json").write_text(json.dumps(description, indent=2) + "\n")
    shutil.copy2(source / "provenance.json", staging / "provenance.json")
    shutil.rmtree(destination, ignore_errors=True)
    staging.rename(destination)
    return chosen


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=6)
    parser.add_argument("--train-count", type=int, default=4)
    parser.add_argument("--slices", type=int, default=20, help="slices per slab of a 3-D set")
    parser.add_argument("--sets", nargs="+", default=["mni-brain", "brain-lesion", "mni-brain-3d"])
    parser.add_argument("--cache", type=Path, default=HERE / "cache")
    parser.add_argument("--out", type=Path, default=HERE.parent / "Sources" / "SliceLabKit" / "Resources" / "Demo")
    args = parser.parse_args(argv)
    for name in args.sets:
        if (args.cache / name / "splits_final.json").exists():
            chosen = make_demo_3d(args.cache / name, args.out / name, 2, args.slices)
        else:
            chosen = make_demo(args.cache / name, args.out / name, args.count, args.train_count)
        size = sum(p.stat().st_size for p in (args.out / name).rglob("*") if p.is_file())
        print(f"{args.out / name}: {', '.join(chosen)} ({size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
