#!/usr/bin/env python3
"""The Dice a segmentation head can reach at all when its logits live on a grid `stride` times coarser than the
image and are upsampled bilinearly (align_corners=False), as DeepLabV3's are.

For each case of a labeled set's split, the reference label map is one-hot encoded, averaged over stride x stride
cells (the best coarse summary of it), turned into log-probabilities, upsampled bilinearly to the image size and
arg-maxed; the Dice of that map against the reference, per class and averaged over cases, is printed per
stride. It is an estimate of the ceiling, not a bound: a network can place sharper logits than cell averages,
but a structure thinner than a cell (a 2-3 pixel cortical ribbon at stride 8) cannot be drawn by any smooth
interpolation of a coarse grid. Pure NumPy, no model.

An nnU-Net v2 raw set (NIfTI, e.g. mni-brain-3d) is read slice by slice along its third (slice) axis, as SliceLab
segments volumes, and scored with one Dice per case over the whole volume: `--split test` is labelsTs/, `--split
val` fold 0's val cases of splits_final.json (labelsTr/), `--split train` labelsTr/.

    python Datasets/stride_ceiling.py Datasets/cache/mni-brain --split val --strides 8,4,2
"""

from __future__ import annotations

import argparse
import json
import pathlib

import h5py
import numpy as np
from PIL import Image


def read_labels(folder: pathlib.Path, case: str) -> np.ndarray:
    png, h5 = folder / "labels" / f"{case}.png", folder / "labels" / f"{case}.h5"
    if png.exists():
        return np.asarray(Image.open(png)).astype(np.int64)
    if h5.exists():
        with h5py.File(h5, "r") as f:
            return np.asarray(f["labels"]).astype(np.int64).reshape(f["labels"].shape[-2:])
    raise SystemExit(f"{folder}: no PNG or HDF5 label map for case {case} (DICOM SEG labels are not read here)")


def area_downsample(planes: np.ndarray, stride: int) -> np.ndarray:
    """[K, H, W] averaged onto the ceil(H/stride) x ceil(W/stride) grid a stride-`stride` network outputs, cell i
    covering pixels floor(i*H/n) to ceil((i+1)*H/n) (torch's adaptive average pooling): the grid geometry that
    the bilinear upsampling to H x W assumes."""
    def cells(n_in: int):
        n = -(-n_in // stride)
        return [(i * n_in // n, -(-(i + 1) * n_in // n)) for i in range(n)]

    rows = np.stack([planes[:, a:b, :].mean(axis=1) for a, b in cells(planes.shape[1])], axis=1)
    return np.stack([rows[:, :, a:b].mean(axis=2) for a, b in cells(planes.shape[2])], axis=2)


def bilinear(planes: np.ndarray, height: int, width: int) -> np.ndarray:
    """torch.nn.functional.interpolate(mode="bilinear", align_corners=False) of [K, h, w] to [K, height, width]."""
    def taps(n_out: int, n_in: int):
        source = np.maximum((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0)
        low = np.minimum(source.astype(np.int64), n_in - 1)
        return low, np.minimum(low + 1, n_in - 1), source - low

    y0, y1, fy = taps(height, planes.shape[1])
    x0, x1, fx = taps(width, planes.shape[2])
    rows = planes[:, y0, :] * (1 - fy)[None, :, None] + planes[:, y1, :] * fy[None, :, None]
    return rows[:, :, x0] * (1 - fx)[None, None, :] + rows[:, :, x1] * fx[None, None, :]


def nnunet_cases(folder: pathlib.Path, description: dict, split: str) -> tuple[list, dict]:
    """(case names, case -> label volume reader) of an nnU-Net v2 raw set's split; planes are axial slices."""
    import nibabel
    ending = description["file_ending"]
    labels = folder / ("labelsTs" if split == "test" else "labelsTr")
    if split == "val":
        cases = json.loads((folder / "splits_final.json").read_text())[0]["val"]
    else:
        cases = sorted(p.name[:-len(ending)] for p in labels.glob(f"*{ending}"))

    def read(case: str) -> np.ndarray:
        volume = np.asanyarray(nibabel.load(str(labels / f"{case}{ending}")).dataobj).astype(np.int64)
        return np.transpose(volume, (2, 1, 0))                          # (slices, rows, columns)
    return cases, read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset")
    parser.add_argument("--split", default="val")
    parser.add_argument("--strides", default="8,4,2")
    args = parser.parse_args()
    folder = pathlib.Path(args.dataset)
    description = json.loads((folder / "dataset.json").read_text())
    if "file_ending" in description:                                     # nnU-Net v2 raw: volumes
        classes = [name for name, _ in sorted(description["labels"].items(), key=lambda item: item[1])]
        cases, read = nnunet_cases(folder, description, args.split)
        description["name"] = description.get("name", folder.name)
    else:
        classes = description["classes"]
        cases = description["splits"][args.split]
        read = lambda case: read_labels(folder, case)[None]             # noqa: E731 (one plane)
    print(f"{description['name']}, split {args.split} ({len(cases)} cases): Dice ceiling per class "
          f"({', '.join(classes[1:])})")
    for stride in (int(s) for s in args.strides.split(",")):
        dice = {k: [] for k in range(1, len(classes))}
        for case in cases:
            truth = read(case)
            predicted = np.empty_like(truth)
            for index, plane in enumerate(truth):
                one_hot = (plane[None] == np.arange(len(classes))[:, None, None]).astype(np.float64)
                logits = bilinear(np.log(area_downsample(one_hot, stride) + 1e-3), *plane.shape)
                predicted[index] = logits.argmax(axis=0)
            for k in dice:
                a, b = predicted == k, truth == k
                if a.sum() + b.sum():
                    dice[k].append(2 * (a & b).sum() / (a.sum() + b.sum()))
        print(f"  stride {stride}: " + "  ".join(f"{np.mean(v):.3f}" for v in dice.values()))


if __name__ == "__main__":
    main()
