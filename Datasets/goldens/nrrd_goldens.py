"""NRRD and 3D Slicer segmentation goldens.

Writes small NRRD files with pynrrd (attached and detached headers; raw, gzip and ascii encodings; little and big
endian; LPS, RAS and tilted spaces) and copies the segmentations and CT volume of slicerio's wheel (MIT licence),
then records what the peers read from each: SimpleITK (ITK's NRRD reader) the voxel array in `GetArrayFromImage`
order (z, y, x) and the geometry (spacing z, y, x; origin and direction in LPS); slicerio the segment table and the
label map of every segment in file order (segment i = class i + 1, later segments over earlier ones).

Usage: python nrrd_goldens.py OUT_FOLDER   (peers: requirements-nrrd.txt)
Writes OUT_FOLDER/<case>.nrrd|.nhdr|.seg.nrrd and OUT_FOLDER/goldens.h5 with /<case>/{array, spacing, origin,
direction} (array: every `stride`-th voxel along each axis, with the `sum` of all) or, for a segmentation,
/<case>/labels and the segment table as attributes; the peers' versions on the root.
"""
import importlib.metadata
import pathlib
import shutil
import sys

import h5py
import nrrd
import numpy as np
import SimpleITK as sitk
import slicerio

from nifti_goldens import rotation  # the same tilts as the NIfTI goldens

rng = np.random.default_rng(20261206)


def write_cases(out):
    """(name, file) of each made case."""
    cases = []
    # Tilted LPS, int16, raw, attached. pynrrd takes arrays in Fortran order (x fastest): shape (x, y, z).
    data = rng.integers(-1000, 3000, size=(7, 5, 4)).astype(np.int16)
    directions = rotation((1, 2, 3), 25) @ np.diag([0.8, 1.1, 2.5])
    nrrd.write(str(out / "tilted_int16_raw.nrrd"), data, {
        "space": "left-posterior-superior", "space directions": directions.T, "space origin": [10.5, -20.25, 33.0],
        "kinds": ["domain"] * 3, "encoding": "raw", "endian": "little"})
    cases.append(("tilted_int16_raw", "tilted_int16_raw.nrrd"))
    # RAS, float32, gzip: ITK turns it into LPS.
    data = rng.normal(size=(6, 4, 3)).astype(np.float32)
    nrrd.write(str(out / "ras_float_gzip.nrrd"), data, {
        "space": "right-anterior-superior", "space directions": np.diag([0.5, 0.75, 3.0]),
        "space origin": [-5.0, 7.0, 11.0], "kinds": ["domain"] * 3, "encoding": "gzip"})
    cases.append(("ras_float_gzip", "ras_float_gzip.nrrd"))
    # Detached header, uint16 big endian, raw data in its own file.
    data = rng.integers(0, 60000, size=(5, 3, 2)).astype(np.uint16)
    nrrd.write(str(out / "detached_big.nhdr"), data, {
        "space": "left-posterior-superior", "space directions": np.diag([1.5, 1.5, 4.0]),
        "space origin": [0.0, 0.0, 0.0], "kinds": ["domain"] * 3, "encoding": "raw", "endian": "big"},
        detached_header=True)
    cases.append(("detached_big", "detached_big.nhdr"))
    # ascii, uint8.
    data = rng.integers(0, 255, size=(4, 3, 2)).astype(np.uint8)
    nrrd.write(str(out / "ascii_uchar.nrrd"), data, {
        "space": "left-posterior-superior", "space directions": np.diag([2.0, 3.0, 4.0]),
        "space origin": [1.0, 2.0, 3.0], "kinds": ["domain"] * 3, "encoding": "ascii"})
    cases.append(("ascii_uchar", "ascii_uchar.nrrd"))
    # slicerio's wheel: a CT volume and two segmentations (one layer; overlapping segments in two layers).
    data_folder = pathlib.Path(slicerio.__file__).parent / "data"
    for name in ("CTChest4.nrrd", "Segmentation.seg.nrrd", "SegmentationOverlapping.seg.nrrd"):
        shutil.copy(data_folder / name, out / name)
        cases.append((name.split(".")[0], name))
    return cases


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    cases = write_cases(out)
    with h5py.File(out / "goldens.h5", "w") as goldens:
        for package in ("SimpleITK", "pynrrd", "slicerio", "numpy"):
            goldens.attrs[package] = importlib.metadata.version(package)
        for case, file in cases:
            group = goldens.create_group(case)
            group.attrs["file"] = file
            if file.endswith(".seg.nrrd"):
                segmentation = slicerio.read_segmentation(str(out / file))
                segments = segmentation["segments"]
                group.attrs["names"] = [s["name"] for s in segments]
                group.attrs["label_values"] = [int(s["labelValue"]) for s in segments]
                group.attrs["layers"] = [int(s.get("layer", 0)) for s in segments]
                voxels = segmentation["voxels"]  # (x, y, z) or (layers, x, y, z) as stored
                layered = voxels if voxels.ndim == 4 else voxels[np.newaxis]
                labels = np.zeros(layered.shape[1:], np.uint16)
                for index, segment in enumerate(segments):
                    mask = layered[int(segment.get("layer", 0))] == int(segment["labelValue"])
                    labels[mask] = np.maximum(labels[mask], index + 1)
                group.create_dataset("labels", data=labels.transpose(2, 1, 0), compression="gzip")
                origin = np.asarray(segmentation["ijkToLPS"])[:3, 3]
                group.attrs["slicerio_origin"] = origin
                continue
            image = sitk.ReadImage(str(out / file))
            array = sitk.GetArrayFromImage(image).astype(np.float32)
            # Large volumes keep every 3rd voxel along each axis and the sum of all (the file is committed).
            group.attrs["stride"] = 1 if array.size < 10000 else 3
            group.attrs["sum"] = float(array.astype(np.float64).sum())
            stride = group.attrs["stride"]
            group.create_dataset("array", data=array[::stride, ::stride, ::stride], compression="gzip")
            group.create_dataset("spacing", data=np.array(image.GetSpacing()[::-1]))
            group.create_dataset("origin", data=np.array(image.GetOrigin()))
            group.create_dataset("direction", data=np.array(image.GetDirection()))
    print(f"wrote {len(cases)} cases and {out / 'goldens.h5'}")


if __name__ == "__main__":
    main()
