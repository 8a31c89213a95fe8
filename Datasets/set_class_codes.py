#!/usr/bin/env python3
"""Copies a labeled set's `class_codes` (dataset.json) into a checkpoint's `class_codes` attribute, as `slicelab
train` stores them, so `segment --out OUT.dcm` codes the DICOM SEG's segments (used for the bundled models, which
were trained before the attribute existed). Codes are keyed by class name, each {category, type[, region]} of
{value, scheme, meaning}.

    python Datasets/set_class_codes.py MODEL.h5 DATASET.json
"""
import json
import sys

import h5py


def main():
    model, description = sys.argv[1], json.load(open(sys.argv[2]))
    codes = description["class_codes"]
    with h5py.File(model, "r+") as f:
        names = [n.decode() if isinstance(n, bytes) else n for n in f.attrs["class_names"]]
        unknown = sorted(set(codes) - set(names))
        if unknown:
            sys.exit(f"set_class_codes.py: {unknown} are not classes of {model} ({names})")
        f.attrs["class_codes"] = json.dumps(codes, sort_keys=True, separators=(",", ":"))
    print(f"{model}: class_codes for {', '.join(sorted(codes))}")


if __name__ == "__main__":
    main()
