"""NIfTI reader goldens: small NIfTI-1 and NIfTI-2 files written with nibabel, and what SimpleITK (NIfTI-1) or
nibabel (NIfTI-2, which SimpleITK cannot read; and the 4-D file) reads from them: the voxel array in
`GetArrayFromImage` order and the geometry as SimpleITK gives it (spacing z, y, x; origin and direction in LPS).

Usage: python nifti_goldens.py OUT_FOLDER   (peers: requirements-nifti.txt)
Writes OUT_FOLDER/<case>.nii[.gz] and OUT_FOLDER/goldens.h5 with /<case>/{array, spacing, origin, direction} and
the peers' versions as attributes of the root.
"""
import gzip
import math
import pathlib
import struct
import sys

import h5py
import nibabel as nib
import numpy as np
import SimpleITK as sitk

rng = np.random.default_rng(20261201)


def rotation(axis, degrees):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    x, y, z = axis
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return np.array([[c + x * x * (1 - c), x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
                     [y * x * (1 - c) + z * s, c + y * y * (1 - c), y * z * (1 - c) - x * s],
                     [z * x * (1 - c) - y * s, z * y * (1 - c) + x * s, c + z * z * (1 - c)]])


def affine(zooms, rotate=np.eye(3), flip_z=False, offset=(0, 0, 0)):
    matrix = np.eye(4)
    scale = np.diag([zooms[0], zooms[1], -zooms[2] if flip_z else zooms[2]])
    matrix[:3, :3] = rotate @ scale
    matrix[:3, 3] = offset
    return matrix


def values(shape, dtype):
    info = np.iinfo(dtype) if np.issubdtype(dtype, np.integer) else None
    if info is None:
        return rng.normal(0, 100, shape).astype(dtype)
    low, high = max(info.min, -30000), min(info.max, 60000)
    return rng.integers(low, high, shape, endpoint=True).astype(dtype)


def lps_geometry_from_affine(matrix, zooms):
    """SimpleITK's convention from a RAS affine: spacing (z, y, x), origin and direction in LPS."""
    flip = np.diag([-1, -1, 1])
    direction = flip @ matrix[:3, :3] / np.asarray(zooms[:3])
    origin = flip @ matrix[:3, 3]
    return list(zooms[:3][::-1]), list(origin), list(direction.ravel())


def main(out):
    out.mkdir(parents=True, exist_ok=True)
    cases = []  # (name, image, peer)

    def add(name, image, peer="sitk", scaling=None):
        path = out / name
        image.to_filename(str(path))
        if scaling:  # nibabel drops a scaling that integer voxels do not need: write scl_slope, scl_inter itself
            opener = gzip.open if name.endswith(".gz") else open
            with opener(path, "rb") as file:
                raw = bytearray(file.read())
            struct.pack_into(image.header.endianness + "ff", raw, 112, *scaling)
            with (gzip.GzipFile(path, "wb", mtime=0) if name.endswith(".gz") else open(path, "wb")) as file:
                file.write(bytes(raw))
        cases.append((name, path, peer))

    # xyz shapes (nibabel's order); arrays are stored x fastest.
    img = nib.Nifti1Image(values((7, 6, 5), np.int16), affine((0.8, 0.9, 3.0), offset=(10, -20, 30)))
    img.set_qform(None, code=0)
    img.set_sform(img.affine, code=2)
    add("int16-sform-only.nii.gz", img)

    img = nib.Nifti1Image(values((5, 4, 3), np.uint8),
                          affine((1.2, 1.0, 2.5), rotation((1, 2, 3), 25), flip_z=True, offset=(-5, 7, 11)))
    img.set_sform(None, code=0)
    img.set_qform(img.affine, code=1)
    add("uint8-qform-only-qfac.nii", img)

    matrix = affine((0.7, 0.7, 1.5), rotation((0, 0, 1), 30), offset=(3, 4, 5))
    img = nib.Nifti1Image(values((6, 5, 4), np.float32), matrix)
    img.set_qform(matrix, code=1)
    img.set_sform(matrix, code=1)
    add("float32-qform-sform.nii.gz", img)

    img = nib.Nifti1Image(values((5, 5, 3), np.int16), affine((1, 1, 2)))
    add("int16-scaled.nii.gz", img, scaling=(2.5, -10))

    for dtype in (np.int8, np.uint16, np.int32, np.uint32, np.int64, np.float64):
        img = nib.Nifti1Image(values((4, 3, 2), dtype), affine((1.5, 1.5, 4)), dtype=dtype)
        add(f"{np.dtype(dtype).name}.nii", img)

    img = nib.Nifti1Image(values((9, 8), np.int16), affine((0.5, 0.6, 1)))
    add("int16-2d.nii", img)

    matrix = affine((1.1, 0.9, 2.0), rotation((1, 0, 1), 15), offset=(1, 2, 3))
    img = nib.Nifti2Image(values((5, 4, 3), np.int16), matrix)
    img.set_qform(matrix, code=1)
    img.set_sform(matrix, code=1)
    add("nifti2-int16.nii.gz", img, peer="nibabel")

    img = nib.Nifti1Image(values((5, 4, 3, 2), np.float32), affine((1, 1, 1.5), offset=(2, 2, 2)))
    add("float32-4d.nii.gz", img, peer="nibabel")

    # Big-endian files (header and voxels), compressed and not, scaled and not.
    for name, dtype, scaled in (("int16-big-endian-scaled.nii.gz", ">i2", True),
                                ("float64-big-endian.nii", ">f8", False)):
        header = nib.Nifti1Header(endianness=">")
        native = np.dtype(dtype).newbyteorder("=")
        img = nib.Nifti1Image(values((5, 4, 3), native), affine((0.9, 1.1, 2.0), offset=(4, -3, 8)), header=header)
        img.set_data_dtype(native)
        add(name, img, scaling=(0.5, 100) if scaled else None)

    with h5py.File(out / "goldens.h5", "w") as goldens:
        goldens.attrs["SimpleITK"] = sitk.Version_VersionString()
        goldens.attrs["nibabel"] = nib.__version__
        goldens.attrs["numpy"] = np.__version__
        for name, path, peer in cases:
            group = goldens.create_group(name)
            group.attrs["peer"] = peer
            if peer == "sitk":
                image = sitk.ReadImage(str(path), sitk.sitkFloat64)
                array = sitk.GetArrayFromImage(image)
                spacing = list(image.GetSpacing())[::-1]
                origin, direction = list(image.GetOrigin()), list(image.GetDirection())
                if image.GetDimension() == 2:  # the contract: a 2-D image is one slice of spacing pixdim[3] or 1
                    spacing = [1.0] + spacing
                    origin = origin + [0.0]
                    direction = [direction[0], direction[1], 0, direction[2], direction[3], 0, 0, 0, 1]
            else:
                image = nib.load(str(path))
                data = np.asarray(image.dataobj, dtype=np.float64)
                array = data.transpose(tuple(range(data.ndim))[::-1])  # x fastest → C order [c, z, y, x]
                spacing, origin, direction = lps_geometry_from_affine(image.affine, image.header.get_zooms())
            group["array"] = array.astype(np.float64)
            group["spacing"], group["origin"], group["direction"] = spacing, origin, direction


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))
