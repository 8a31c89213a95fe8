"""Writes simulated MR slices as DICOM MR Image Storage files (PS3.3 A.4) with pydicom."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.uid import ExplicitVRLittleEndian, MRImageStorage, PYDICOM_IMPLEMENTATION_UID

from .acquisition import Scanner

#: Fixed dates and times: a rebuilt set must be byte-identical.
STUDY_DATE, STUDY_TIME = "20090101", "120000"


@dataclass(frozen=True)
class SeriesIdentity:
    """Who and what a series belongs to; UIDs come from `seeding.uid`, so they are deterministic."""

    patient_name: str
    patient_id: str
    study_uid: str
    series_uid: str
    frame_of_reference_uid: str
    series_number: int
    study_description: str
    single_instance: bool = False   # the series holds this one slice only (InstanceNumber 1)


def _ds(value: float) -> str:
    """A Decimal String of at most 16 characters that reads back as `value` to about 1e-10."""
    text = f"{value:.10g}"
    return text if len(text) <= 16 else f"{value:.8g}"


def write_mr_slice(path: Path, physical: np.ndarray, scanner: Scanner, series: SeriesIdentity,
                   sop_instance_uid: str, instance_number: int, position_lps: tuple, pixel_spacing: tuple,
                   image_comments: str) -> None:
    """Stores `physical` (float, >= 0) as uint16 with RescaleSlope = scanner.rescale_slope, intercept 0,
    MONOCHROME2, 16 bits allocated and stored. Geometry: axial, rows anterior to posterior, columns right to
    left (ImageOrientationPatient 1\\0\\0\\0\\1\\0), ImagePositionPatient = centre of the first pixel in mm."""
    slope = scanner.rescale_slope
    stored = np.clip(np.rint(physical / slope), 0, 65535).astype("<u2")

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = MRImageStorage
    meta.MediaStorageSOPInstanceUID = sop_instance_uid
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    meta.ImplementationClassUID = PYDICOM_IMPLEMENTATION_UID
    meta.ImplementationVersionName = "SLICELAB_DS_1"

    ds = Dataset()
    ds.file_meta = meta
    ds.SpecificCharacterSet = "ISO_IR 100"
    ds.ImageType = ["ORIGINAL", "PRIMARY", "M", "ND"]
    ds.SOPClassUID = MRImageStorage
    ds.SOPInstanceUID = sop_instance_uid
    ds.StudyDate = ds.SeriesDate = ds.AcquisitionDate = ds.ContentDate = STUDY_DATE
    ds.StudyTime = ds.SeriesTime = ds.AcquisitionTime = ds.ContentTime = STUDY_TIME
    ds.AccessionNumber = ""
    ds.Modality = "MR"
    ds.Manufacturer = "SliceLab"
    ds.InstitutionName = "SliceLab synthetic data"
    ds.ReferringPhysicianName = ""
    ds.StudyDescription = series.study_description
    ds.SeriesDescription = scanner.series_description
    ds.ManufacturerModelName = scanner.protocol["ManufacturerModelName"]
    ds.PatientName = series.patient_name
    ds.PatientID = series.patient_id
    ds.PatientBirthDate = ""
    ds.PatientSex = "O"
    ds.BodyPartExamined = "BRAIN"
    ds.ScanningSequence = ["GR", "IR"]
    ds.SequenceVariant = ["SP", "MP"]
    ds.ScanOptions = ""
    ds.MRAcquisitionType = "3D"
    ds.SliceThickness = _ds(scanner.slice_thickness_mm)
    ds.RepetitionTime = _ds(scanner.protocol["RepetitionTime"])
    ds.EchoTime = _ds(scanner.protocol["EchoTime"])
    ds.InversionTime = _ds(scanner.protocol["InversionTime"])
    ds.MagneticFieldStrength = _ds(scanner.protocol["MagneticFieldStrength"])
    ds.EchoTrainLength = 1
    ds.FlipAngle = _ds(scanner.protocol["FlipAngle"])
    columns_sampled = int(round(physical.shape[1] * scanner.kspace_fraction))
    rows_sampled = int(round(physical.shape[0] * scanner.kspace_fraction))
    ds.AcquisitionMatrix = [0, columns_sampled, rows_sampled, 0]
    ds.InPlanePhaseEncodingDirection = "COL"
    ds.PatientPosition = "HFS"
    ds.StudyInstanceUID = series.study_uid
    ds.SeriesInstanceUID = series.series_uid
    ds.StudyID = "1"
    ds.SeriesNumber = series.series_number
    ds.AcquisitionNumber = 1
    ds.InstanceNumber = instance_number
    ds.ImagePositionPatient = [_ds(v) for v in position_lps]
    ds.ImageOrientationPatient = ["1", "0", "0", "0", "1", "0"]
    ds.FrameOfReferenceUID = series.frame_of_reference_uid
    ds.PositionReferenceIndicator = ""
    ds.SliceLocation = _ds(position_lps[2])
    ds.ImageComments = image_comments
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = "MONOCHROME2"
    ds.Rows, ds.Columns = int(stored.shape[0]), int(stored.shape[1])
    ds.PixelSpacing = [_ds(pixel_spacing[0]), _ds(pixel_spacing[1])]
    ds.BitsAllocated = 16
    ds.BitsStored = 16
    ds.HighBit = 15
    ds.PixelRepresentation = 0
    low, high = np.percentile(stored[stored > 0] if np.any(stored > 0) else stored, [0.5, 99.5]) * slope
    ds.WindowCenter = _ds(round((low + high) / 2, 3))
    ds.WindowWidth = _ds(round(max(high - low, 1.0), 3))
    ds.RescaleIntercept = "0"
    ds.RescaleSlope = _ds(slope)
    ds.RescaleType = "US"
    ds.PixelData = stored.tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.save_as(path, enforce_file_format=True)
