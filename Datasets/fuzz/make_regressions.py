"""Writes the hand-made fuzz regression inputs (issue #10) that the fuzzer's own crash files cannot stand for.

Each input is a minimal file that reached a trap in a SliceLab reader: the test beside it in
Tests/<Target>Tests/Fixtures/fuzz/ reads it and expects a typed error. Peer: pydicom (its version is printed),
used only to write the DICOM container around the crafted bytes.
Usage: make_regressions.py   (run with /work/goldens-venv/bin/python or any Python with pydicom and numpy)
"""
import pathlib

import pydicom
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.encaps import encapsulate
from pydicom.uid import JPEG2000Lossless, SecondaryCaptureImageStorage, generate_uid

root = pathlib.Path(__file__).resolve().parents[2]
print(f"make_regressions.py: pydicom {pydicom.__version__}")


def jpeg2000_dicom(fragment: bytes, path: pathlib.Path):
    """An 8×8 MONOCHROME2 16-bit JPEG 2000 Lossless image whose one fragment is `fragment`."""
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = SecondaryCaptureImageStorage
    meta.MediaStorageSOPInstanceUID = "1.2.826.0.1.3680043.10.10.1"
    meta.TransferSyntaxUID = JPEG2000Lossless
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID, ds.SOPInstanceUID = meta.MediaStorageSOPClassUID, meta.MediaStorageSOPInstanceUID
    ds.Modality = "OT"
    ds.Rows, ds.Columns, ds.SamplesPerPixel = 8, 8, 1
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 16, 15, 0
    ds.PhotometricInterpretation = "MONOCHROME2"
    ds.PixelData = encapsulate([fragment])
    ds["PixelData"].VR = "OB"
    ds.save_as(path, enforce_file_format=True)


signature = bytes([0, 0, 0, 12]) + b"jP  " + bytes([0x0D, 0x0A, 0x87, 0x0A])
dicom = root / "Tests/DICOMTests/Fixtures/fuzz"
dicom.mkdir(parents=True, exist_ok=True)
# A JP2 'jp2c' box declaring the 64-bit (XL) length form but too short to hold it: the box's end fell before
# its payload's start (a reversed range).
jpeg2000_dicom(signature + bytes([0, 0, 0, 1]) + b"jp2c", dicom / "jp2-short-xl-box.dcm")
# A 'jp2c' box whose XL length is 2^63 - 1: the box's end overflowed Int.
jpeg2000_dicom(signature + bytes([0, 0, 0, 1]) + b"jp2c" + bytes([0x7F] + [0xFF] * 7) + b"\xff\x4f",
               dicom / "jp2-xl-length-overflow.dcm")
# A 'jp2c' box whose XL length is negative as a signed 64-bit integer.
jpeg2000_dicom(signature + bytes([0, 0, 0, 1]) + b"jp2c" + bytes([0xFF] * 8) + b"\xff\x4f",
               dicom / "jp2-xl-length-negative.dcm")
# A bare codestream holding only its SOC marker: OpenJPEG 2.5.0 read past its stream buffer on it.
jpeg2000_dicom(b"\xff\x4f", dicom / "j2k-soc-only.dcm")
print(f"make_regressions.py: wrote {sorted(p.name for p in dicom.iterdir())}")
