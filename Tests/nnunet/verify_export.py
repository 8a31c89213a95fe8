"""nnU-Net's own checks on what SliceLab writes and reads (`make test-nnunet`; needs nnunetv2, not in `make test`).

1. A Decathlon set (4-D NIfTI, two channels, written here with nibabel) and a set in SliceLab's own layout (2-D
   PNG) go through `slicelab dataset export --format nnunet`; nnunetv2's `verify_dataset_integrity` must accept
   both results.
2. nnunetv2's `generate_crossval_split` (scikit-learn's KFold) must give the folds that SliceLab generates, as
   `DatasetLayoutTests.foldsAreNNUNetsKFoldOverSortedIdentifiers` expects them.

Usage: .venv-nnunet/bin/python Tests/nnunet/verify_export.py PATH/TO/slicelab
"""
import json
import pathlib
import subprocess
import sys
import tempfile
from importlib.metadata import version

import nibabel as nib
import numpy as np


def make_msd(root: pathlib.Path, count: int = 6):
    (root / "imagesTr").mkdir(parents=True)
    (root / "labelsTr").mkdir()
    affine = np.diag([-1.25, -0.75, 3.0, 1.0])
    affine[:3, 3] = [10, -20, 30]
    z, y, x = np.meshgrid(np.arange(8), np.arange(16), np.arange(16), indexing="ij")
    training = []
    for k in range(count):
        labels = np.zeros((8, 16, 16), np.uint8)
        labels[4 * (z - 3) ** 2 + (y - 6) ** 2 + (x - 5 - k) ** 2 <= 16] = 1
        labels[(z >= 1) & (z <= 5) & (y >= 11) & (y <= 14) & (x >= 8) & (x <= 14)] = 2
        image = np.stack([labels * 100.0 + (x + k) % 11, 50.0 - labels * 20.0 + y % 7], axis=-1)  # z,y,x,c
        name = f"synth_{k:03d}"
        # nibabel's arrays are x, y, z(, c): transpose from the z, y, x order used here.
        nib.save(nib.Nifti1Image(image.transpose(2, 1, 0, 3).astype(np.float32), affine),
                 root / "imagesTr" / f"{name}.nii.gz")
        nib.save(nib.Nifti1Image(labels.transpose(2, 1, 0), affine), root / "labelsTr" / f"{name}.nii.gz")
        training.append({"image": f"./imagesTr/{name}.nii.gz", "label": f"./labelsTr/{name}.nii.gz"})
    (root / "dataset.json").write_text(json.dumps({
        "name": "SynthMSD", "modality": {"0": "T1", "1": "T2"},
        "labels": {"0": "background", "1": "sphere", "2": "box"},
        "numTraining": count, "training": training, "test": []}))


def make_own_png_set(root: pathlib.Path):
    """SliceLab's own layout (Datasets/README.md): 2-D PNG images and labels, train/val/test splits."""
    from PIL import Image
    (root / "images").mkdir(parents=True)
    (root / "labels").mkdir()
    y, x = np.meshgrid(np.arange(24), np.arange(24), indexing="ij")
    names = [f"slice{k}" for k in range(6)]
    for k, name in enumerate(names):
        labels = np.zeros((24, 24), np.uint8)
        labels[(y - 10) ** 2 + (x - 8 - k) ** 2 <= 25] = 1
        Image.fromarray((labels * 120 + (x + y) % 9).astype(np.uint8)).save(root / "images" / f"{name}.png")
        Image.fromarray(labels).save(root / "labels" / f"{name}.png")
    (root / "dataset.json").write_text(json.dumps({
        "name": "own png", "classes": ["background", "disc"], "modality": "OT",
        "splits": {"train": names[:3], "val": names[3:4], "test": names[4:]}}))


def main():
    slicelab = sys.argv[1]
    print("peers:", {name: version(name) for name in ("nnunetv2", "scikit-learn", "nibabel", "SimpleITK")})
    from nnunetv2.experiment_planning.verify_dataset_integrity import verify_dataset_integrity
    from nnunetv2.utilities.crossval_split import generate_crossval_split

    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)
        make_msd(work / "Task09_Synth")
        subprocess.run([slicelab, "dataset", "export", str(work / "Task09_Synth"), "--format", "nnunet",
                        "--out", str(work / "raw"), "--id", "9"], check=True)
        exported = work / "raw" / "Dataset009_SynthMSD"
        verify_dataset_integrity(str(exported), num_processes=1)  # raises on any error
        subprocess.run([slicelab, "dataset", "check", str(exported)], check=True)
        make_own_png_set(work / "own")
        subprocess.run([slicelab, "dataset", "export", str(work / "own"), "--format", "nnunet",
                        "--out", str(work / "raw"), "--id", "10"], check=True)
        verify_dataset_integrity(str(work / "raw" / "Dataset010_own_png"), num_processes=1)

    def names(n):
        return [f"c{i:02d}" for i in range(n)]

    expected = {
        (10, 12345): [[0, 7], [3, 9], [4, 6], [1, 8], [2, 5]],
        (23, 12345): [[3, 8, 10, 17, 19], [0, 7, 12, 15, 16], [6, 11, 14, 18, 20], [9, 13, 21, 22], [1, 2, 4, 5]],
    }
    for (n, seed), folds in expected.items():
        splits = generate_crossval_split(names(n), seed=seed, n_splits=5)
        got = [[int(v[1:]) for v in fold["val"]] for fold in splits]
        assert got == folds, f"n={n} seed={seed}: nnU-Net's folds {got}, SliceLab's {folds}"
    print("nnU-Net accepts the export; its folds are SliceLab's")


if __name__ == "__main__":
    main()
