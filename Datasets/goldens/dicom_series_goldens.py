"""DICOM series geometry goldens: small CT/MR series written with pydicom (shuffled file order, a tilted gantry, an
oblique orientation with a fractional rescale) and what SimpleITK's ImageSeriesReader reads from them, files
ordered by `GetGDCMSeriesFileNames` as SimpleITK users do: the array in `GetArrayFromImage` order (z, y, x) and the
geometry (spacing z, y, x; origin and direction in LPS, direction row-major with columns along x, y, z index).

Usage: python dicom_series_goldens.py OUT_FOLDER   (peers: requirements-geometry.txt)
Writes OUT_FOLDER/<case>/*.dcm and OUT_FOLDER/goldens.h5 with /<case>/{array, spacing, origin, direction} and the
peers' versions as attributes of the root.
"""
import math
import pathlib
import shutil
import sys

import h5py
import numpy as np
import pydicom
import SimpleITK as sitk
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.uid import ExplicitVRLittleEndian

rng = np.random.default_rng(20261201)
ROOT = "1.2.826.0.1.3680043.10.1199"  # a test UID root; every UID below is ROOT.<case>.<n>


def write_series(folder, case, rows, columns, positions, orientation, spacing, stored, slope, intercept,
                 modality="CT", order=None):
    folder.mkdir(parents=True)
    study, series, frame = f"{ROOT}.{case}.1", f"{ROOT}.{case}.2", f"{ROOT}.{case}.3"
    order = list(range(len(positions))) if order is None else order
    for file_index, k in enumerate(order):  # file names and instance numbers do not follow the slice order
        meta = FileMetaDataset()
        meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.2" if modality == "CT" else "1.2.840.10008.5.1.4.1.1.4"
        meta.MediaStorageSOPInstanceUID = f"{ROOT}.{case}.10.{k}"
        meta.TransferSyntaxUID = ExplicitVRLittleEndian
        ds = Dataset()
        ds.file_meta = meta
        ds.SOPClassUID, ds.SOPInstanceUID = meta.MediaStorageSOPClassUID, meta.MediaStorageSOPInstanceUID
        ds.Modality = modality
        ds.PatientName, ds.PatientID = "Geometry^Golden", "G1"
        ds.StudyInstanceUID, ds.SeriesInstanceUID, ds.FrameOfReferenceUID = study, series, frame
        ds.InstanceNumber = file_index + 1
        ds.ImagePositionPatient = [f"{v:.6f}" for v in positions[k]]
        ds.ImageOrientationPatient = [f"{v:.8f}" for v in orientation]
        ds.PixelSpacing = [f"{spacing[0]:.6f}", f"{spacing[1]:.6f}"]
        ds.SliceThickness = "2.5"
        ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
        ds.Rows, ds.Columns = rows, columns
        ds.BitsAllocated, ds.BitsStored, ds.HighBit = 16, 16, 15
        ds.PixelRepresentation = 1 if stored.dtype == np.int16 else 0
        ds.RescaleSlope, ds.RescaleIntercept = f"{slope:g}", f"{intercept:g}"
        ds.PixelData = stored[k].tobytes()
        ds.save_as(folder / f"{file_index:03d}-{rng.integers(1 << 30)}.dcm", enforce_file_format=True)


def read_with_simpleitk(folder):
    reader = sitk.ImageSeriesReader()
    reader.SetFileNames(sitk.ImageSeriesReader.GetGDCMSeriesFileNames(str(folder)))
    image = reader.Execute()
    # SimpleITK keeps the file's pixel type when the rescale is the identity-with-integer-intercept, else float.
    return (sitk.GetArrayFromImage(image), image.GetSpacing()[::-1], image.GetOrigin(), image.GetDirection())


def main(out):
    out = pathlib.Path(out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    cases = {}
    # Axial CT, 7 slices of 6 × 5, files shuffled, slices 2.5 mm apart going inferior, intercept -1024.
    stored = rng.integers(-200, 3000, size=(7, 6, 5)).astype(np.int16)
    positions = [(-120.5, -90.25, 40.0 - 2.5 * k) for k in range(7)]
    cases["axial-shuffled"] = dict(rows=6, columns=5, positions=positions, orientation=(1, 0, 0, 0, 1, 0),
                                   spacing=(0.7, 0.8), stored=stored, slope=1, intercept=-1024,
                                   order=list(rng.permutation(7)))
    # A gantry tilted by 20°: rows along x, columns tilted in the y-z plane, positions stepping along z only, so
    # the slices are not stacked along their normal (ITK: spacing from first to last position).
    tilt = math.radians(20)
    stored = rng.integers(0, 2000, size=(6, 5, 4)).astype(np.int16)
    positions = [(-50.0, -60.0, -30.0 + 3.0 * k) for k in range(6)]
    cases["gantry-tilt"] = dict(rows=5, columns=4, positions=positions,
                                orientation=(1, 0, 0, 0, math.cos(tilt), -math.sin(tilt)), spacing=(0.9, 0.6),
                                stored=stored, slope=1, intercept=-1000, order=list(rng.permutation(6)))
    # Oblique MR, unsigned, fractional rescale: rows and columns rotated about an axis, slices along the normal.
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    angle = math.radians(35)
    c, s = math.cos(angle), math.sin(angle)
    x, y, z = axis
    rotate = np.array([[c + x * x * (1 - c), x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
                       [y * x * (1 - c) + z * s, c + y * y * (1 - c), y * z * (1 - c) - x * s],
                       [z * x * (1 - c) - y * s, z * y * (1 - c) + x * s, c + z * z * (1 - c)]])
    row, column = rotate[:, 0], rotate[:, 1]
    normal = np.cross(row, column)
    stored = rng.integers(0, 4000, size=(5, 4, 6)).astype(np.uint16)
    positions = [tuple(np.array([10.0, -20.0, 30.0]) + 4.0 * k * normal) for k in range(5)]
    cases["oblique-scaled"] = dict(rows=4, columns=6, positions=positions, orientation=tuple(row) + tuple(column),
                                   spacing=(1.25, 1.1), stored=stored, slope=0.25, intercept=-3.5, modality="MR",
                                   order=[4, 0, 3, 1, 2])
    with h5py.File(out / "goldens.h5", "w") as goldens:
        goldens.attrs["SimpleITK"] = sitk.Version_VersionString()
        goldens.attrs["pydicom"] = pydicom.__version__
        goldens.attrs["numpy"] = np.__version__
        for case, (name, spec) in enumerate(cases.items()):
            write_series(out / name, case, **spec)
            array, spacing, origin, direction = read_with_simpleitk(out / name)
            group = goldens.create_group(name)
            group["array"] = array.astype(np.float64)
            group["spacing"] = np.array(spacing, np.float64)
            group["origin"] = np.array(origin, np.float64)
            group["direction"] = np.array(direction, np.float64)
            print(f"{name}: {array.shape} spacing {np.round(spacing, 5)} origin {np.round(origin, 4)}")


if __name__ == "__main__":
    main(sys.argv[1])
