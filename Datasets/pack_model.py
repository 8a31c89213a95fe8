#!/usr/bin/env python3
"""Packs a `slicelab train` checkpoint into the compact model bundled with `slicelab demo`.

Keeps what inference needs and what documents the training: `/parameters/<state_dict key>` (stored as IEEE
half precision; SliceLab's HDF5 reader converts them back to Float32 on loading), the `configuration`,
`preprocessing`, `class_names`, `slice_context`, `training_spacing` and `plan` attributes, and `/history`. Drops the optimizer state and the sampler state (only needed to
resume). Records the training command and seed given on the command line, and the source file's SHA-256.

    python Datasets/pack_model.py TRAINED.h5 OUT.h5 --command "slicelab train …" --seed 1
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys

import h5py
import numpy as np


def pack(source: str, destination: str, command: str, seed: int) -> None:
    temporary = destination + f".tmp-{os.getpid()}"
    try:
        write(source, temporary, command, seed)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise
    os.replace(temporary, destination)


def write(source: str, temporary: str, command: str, seed: int) -> None:
    with h5py.File(source, "r") as f, h5py.File(temporary, "w") as out:
        # Older `slicelab train` builds named the attribute `deeplab_configuration`.
        configuration = f.attrs.get("configuration", f.attrs.get("deeplab_configuration"))
        if configuration is None:
            raise SystemExit(f"{source}: no configuration attribute; not a SliceLab checkpoint")
        out.attrs["configuration"] = configuration
        out.attrs["preprocessing"] = f.attrs["preprocessing"]
        # The class names, the slice context and training spacing `segment` applies to volumes, and the plan.
        for key in ("class_names", "slice_context", "training_spacing", "plan"):
            if key in f.attrs:
                out.attrs[key] = f.attrs[key]
        out.attrs["format"] = "slicelab-deeplabv3"
        out.attrs["training_command"] = command
        out.attrs["training_seed"] = seed
        out.attrs["packed_from_sha256"] = hashlib.sha256(open(source, "rb").read()).hexdigest()
        out.attrs["parameter_precision"] = "float16 (restored to float32 on loading)"
        for name, dataset in f["parameters"].items():
            values = dataset[()]
            if values.dtype.kind == "f":
                values = values.astype(np.float16)
            # Uncompressed: gzip gains nothing on half-precision weights (their mantissas look random) and its
            # decompression was a quarter of `compare`'s loading time.
            out.create_dataset(f"parameters/{name}", data=values)
        if "history" in f:
            f.copy("history", out)
        if "training" in f:
            for key in ("step", "best_step", "best_score", "configuration"):
                if key in f["training"].attrs:
                    out.attrs[f"training_{key}"] = f["training"].attrs[key]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source")
    parser.add_argument("destination")
    parser.add_argument("--command", required=True, help="the slicelab train command that produced SOURCE")
    parser.add_argument("--seed", type=int, required=True)
    args = parser.parse_args(argv)
    pack(args.source, args.destination, args.command, args.seed)
    print(f"{args.destination}: {os.path.getsize(args.destination) / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
