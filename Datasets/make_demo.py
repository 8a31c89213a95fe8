#!/usr/bin/env python3
"""Copies a handful of test and training cases of built sets into the bundled demo sets
`Sources/SliceLabKit/Resources/Demo/<set>/`:
images, labels and a dataset.json whose `test` and `train` splits list them (`val` empty), keeping the
provenance of the full set. Run after `make datasets`:

    python Datasets/make_demo.py [--count 6] [--train-count 4] [--sets mni-brain brain-lesion]

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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=6)
    parser.add_argument("--train-count", type=int, default=4)
    parser.add_argument("--sets", nargs="+", default=["mni-brain", "brain-lesion"])
    parser.add_argument("--cache", type=Path, default=HERE / "cache")
    parser.add_argument("--out", type=Path, default=HERE.parent / "Sources" / "SliceLabKit" / "Resources" / "Demo")
    args = parser.parse_args(argv)
    for name in args.sets:
        chosen = make_demo(args.cache / name, args.out / name, args.count, args.train_count)
        size = sum(p.stat().st_size for p in (args.out / name).rglob("*") if p.is_file())
        print(f"{args.out / name}: {', '.join(chosen)} ({size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
