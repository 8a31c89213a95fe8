"""Builds `toy-shapes`, the toy labeled set of issue #5: bright shapes of 3 classes on noisy backgrounds.

Each 8-bit 128 x 128 image has a background near 50, two to four shapes (at least one disc, class 1, near 130, and
one square, class 2, near 210; later shapes may cover earlier ones) and Gaussian noise of sigma 12. Written as HDF5
cases (`/image` uint8, `/labels` uint8) in the labeled-set layout of Datasets/README.md, deterministically from
--seed, with numpy and h5py only (the .venv of `make setup`).
The Swift tests build the same kind of set with Tests/SliceLabTests/TrainToySet.swift.

    python Datasets/build_toy_shapes.py [--out Datasets/cache/toy-shapes] [--train 48] [--val 16] [--size 128]
"""
import argparse
import json
import pathlib

import numpy as np
import h5py


def sample(size, rng):
    labels = np.zeros((size, size), np.uint8)
    y, x = np.mgrid[0:size, 0:size] + 0.5
    for shape in range(2 + rng.integers(0, 3)):
        square = shape == 1 if shape < 2 else bool(rng.integers(0, 2))
        radius = size * rng.uniform(0.08, 0.18)
        cy, cx = rng.uniform(radius, size - radius, 2)
        inside = (np.maximum(abs(y - cy), abs(x - cx)) <= radius) if square else ((y - cy) ** 2 + (x - cx) ** 2
                                                                                  <= radius ** 2)
        labels[inside] = 2 if square else 1
    image = np.array([50.0, 130.0, 210.0])[labels] + rng.normal(0, 12, labels.shape)
    return np.clip(np.rint(image), 0, 255).astype(np.uint8), labels


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parent / "cache/toy-shapes"))
    parser.add_argument("--train", type=int, default=48)
    parser.add_argument("--val", type=int, default=16)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    for sub in ("images", "labels"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    names = [f"toy{i:03d}" for i in range(args.train + args.val)]
    for name in names:
        image, labels = sample(args.size, rng)
        with h5py.File(out / "images" / f"{name}.h5", "w") as f:
            f["image"] = image
        with h5py.File(out / "labels" / f"{name}.h5", "w") as f:
            f["labels"] = labels
    description = {"name": "toy-shapes", "classes": ["background", "disc", "square"], "modality": "OT",
                   "splits": {"train": names[:args.train], "val": names[args.train:]},
                   "preprocessing": {"normalize": "minmax"},
                   "builder": f"Datasets/build_toy_shapes.py --seed {args.seed} --size {args.size}"}
    (out / "dataset.json").write_text(json.dumps(description, indent=1))
    print(f"wrote {len(names)} cases to {out}")


if __name__ == "__main__":
    main()
