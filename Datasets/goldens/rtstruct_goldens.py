"""RT Structure Set goldens: what plastimatch and rt-utils rasterise from structure sets on known image grids.

Cases (written to OUT_FOLDER/<case>/ct/*.dcm and OUT_FOLDER/<case>/RS.dcm):
- `made`: a tilted 6-slice CT series (24 x 20 pixels) and a structure set drawn from known masks: `Square` (an
  axis-aligned polygon whose vertices sit on pixel edges: its mask is known exactly), `Ring` (an outer and an
  inner contour: a hole), `Disc` (a 48-gon), `Marker` (a POINT contour) and `Line` (OPEN_PLANAR), every contour
  referencing its slice's SOP Instance UID.
- `position_only`: the same with the Contour Image Sequences removed (slices matched by position; rt-utils
  cannot read it, plastimatch can).
- `aligned`: `made` on an axis-aligned series of square pixels, which rt-utils reads right too (it drops tilt and
  swaps the pixel spacings).
- `dicompyler`: dicompyler-core 0.5.6's example structure set (BSD licence; a breast plan, 10 ROIs), on a CT
  series made for it: 20 slices at the positions and SOP Instance UIDs its contours reference, 128 x 128 pixels
  over its 512 x 512 field of view; the structure set keeps the contours of those slices.

For each case goldens.h5 has /<case>/<roi>/{plastimatch, rtutils (aligned only), exact (where known)} as uint8
[slices, rows, columns] in the series' order, and the peers' versions on the root.

Usage: python rtstruct_goldens.py DICOMPYLER_EXAMPLE_FOLDER OUT_FOLDER   (peers: requirements-rtstruct.txt;
the example folder is tests/testdata/example_data of `pip download --no-binary :all: dicompyler-core==0.5.6`)
"""
import copy
import importlib.metadata
import math
import pathlib
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import pydicom
import SimpleITK as sitk
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.sequence import Sequence
from pydicom.uid import ExplicitVRLittleEndian, generate_uid

CT_STORAGE = "1.2.840.10008.5.1.4.1.1.2"
RT_STRUCT_STORAGE = "1.2.840.10008.5.1.4.1.1.481.3"
ROOT = "1.2.826.0.1.3680043.10.1234."  # a fixed root, so reruns give the same UIDs


def uid(name):
    return generate_uid(prefix=ROOT, entropy_srcs=[name])


def write_ct(folder, rows, columns, positions, orientation, spacing, frame, series, study, sops, pixels=None):
    folder.mkdir(parents=True, exist_ok=True)
    for index, (position, sop) in enumerate(zip(positions, sops)):
        meta = FileMetaDataset()
        meta.MediaStorageSOPClassUID, meta.MediaStorageSOPInstanceUID = CT_STORAGE, sop
        meta.TransferSyntaxUID = ExplicitVRLittleEndian
        ds = Dataset()
        ds.file_meta = meta
        ds.SOPClassUID, ds.SOPInstanceUID, ds.Modality = CT_STORAGE, sop, "CT"
        ds.PatientName, ds.PatientID, ds.StudyInstanceUID, ds.SeriesInstanceUID = "Golden^RT", "RT01", study, series
        ds.FrameOfReferenceUID, ds.PositionReferenceIndicator = frame, ""
        ds.StudyDate, ds.StudyTime, ds.StudyID, ds.AccessionNumber, ds.ReferringPhysicianName = "20261206", "120000", "1", "", ""
        ds.SeriesNumber, ds.InstanceNumber = 1, index + 1
        ds.ImagePositionPatient = [round(v, 6) for v in position]
        ds.ImageOrientationPatient = [round(v, 9) for v in orientation]
        ds.PixelSpacing, ds.SliceThickness = list(spacing[:2]), spacing[2]
        ds.Rows, ds.Columns = rows, columns
        ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
        ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 16, 15, 1
        ds.RescaleIntercept, ds.RescaleSlope = -1024, 1
        image = pixels[index] if pixels is not None else np.full((rows, columns), 1024, np.int16)
        ds.PixelData = image.astype("<i2").tobytes()
        ds.save_as(folder / f"CT{index:03d}.dcm", enforce_file_format=True)


def structure_set(ct_files, rois, path, label="GOLDEN", references=True):
    """rois: list of (name, color, [(type, points (n, 3), sop uid or None)])."""
    first = pydicom.dcmread(ct_files[0])
    meta = FileMetaDataset()
    sop = uid(str(path))
    meta.MediaStorageSOPClassUID, meta.MediaStorageSOPInstanceUID = RT_STRUCT_STORAGE, sop
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID, ds.SOPInstanceUID, ds.Modality = RT_STRUCT_STORAGE, sop, "RTSTRUCT"
    for keyword in ("PatientName", "PatientID", "StudyInstanceUID", "StudyDate", "StudyTime", "StudyID",
                    "AccessionNumber", "ReferringPhysicianName", "FrameOfReferenceUID", "PositionReferenceIndicator"):
        setattr(ds, keyword, getattr(first, keyword))
    ds.SeriesInstanceUID, ds.SeriesNumber, ds.InstanceNumber = uid(str(path) + "series"), 2, 1
    ds.OperatorsName, ds.Manufacturer = "", "goldens"
    ds.StructureSetLabel, ds.StructureSetDate, ds.StructureSetTime = label, "20261206", "120000"
    frame = Dataset()
    frame.FrameOfReferenceUID = first.FrameOfReferenceUID
    study = Dataset()
    study.ReferencedSOPClassUID, study.ReferencedSOPInstanceUID = "1.2.840.10008.3.1.2.3.1", first.StudyInstanceUID
    series = Dataset()
    series.SeriesInstanceUID = first.SeriesInstanceUID
    images = []
    for file in ct_files:
        item = Dataset()
        item.ReferencedSOPClassUID, item.ReferencedSOPInstanceUID = CT_STORAGE, pydicom.dcmread(file).SOPInstanceUID
        images.append(item)
    series.ContourImageSequence = Sequence(images)
    study.RTReferencedSeriesSequence = Sequence([series])
    frame.RTReferencedStudySequence = Sequence([study])
    ds.ReferencedFrameOfReferenceSequence = Sequence([frame])
    ds.StructureSetROISequence, ds.ROIContourSequence, ds.RTROIObservationsSequence = Sequence(), Sequence(), Sequence()
    for number, (name, color, contours) in enumerate(rois, start=1):
        roi = Dataset()
        roi.ROINumber, roi.ReferencedFrameOfReferenceUID, roi.ROIName = number, first.FrameOfReferenceUID, name
        roi.ROIGenerationAlgorithm = "MANUAL"
        ds.StructureSetROISequence.append(roi)
        roi_contour = Dataset()
        roi_contour.ReferencedROINumber, roi_contour.ROIDisplayColor = number, list(color)
        roi_contour.ContourSequence = Sequence()
        for kind, points, reference in contours:
            contour = Dataset()
            contour.ContourGeometricType, contour.NumberOfContourPoints = kind, len(points)
            contour.ContourData = [f"{v:.6f}".rstrip("0").rstrip(".") for v in np.asarray(points).ravel()]
            if references and reference:
                image = Dataset()
                image.ReferencedSOPClassUID, image.ReferencedSOPInstanceUID = CT_STORAGE, reference
                contour.ContourImageSequence = Sequence([image])
            roi_contour.ContourSequence.append(contour)
        ds.ROIContourSequence.append(roi_contour)
        observation = Dataset()
        observation.ObservationNumber, observation.ReferencedROINumber = number, number
        observation.RTROIInterpretedType, observation.ROIInterpreter = "ORGAN", ""
        ds.RTROIObservationsSequence.append(observation)
    ds.save_as(path, enforce_file_format=True)


def made_case(folder, references, tilt=True):
    rows, columns, slices = 24, 24, 6  # square: rt-utils 1.2.7 swaps rows and columns of others
    a, b = (math.radians(20), math.radians(10)) if tilt else (0.0, 0.0)
    row_direction = np.array([math.cos(a), math.sin(a), 0.0])
    column_direction = np.array([-math.sin(a) * math.cos(b), math.cos(a) * math.cos(b), math.sin(b)])
    normal = np.cross(row_direction, column_direction)
    # Row spacing, column spacing (PixelSpacing order), slice thickness; rt-utils 1.2.7 swaps the two pixel
    # spacings, so the series it reads has square pixels.
    spacing = (1.2, 1.5, 2.5) if tilt else (1.2, 1.2, 2.5)
    origin = np.array([-20.0, 15.0, 30.0])
    positions = [origin + k * spacing[2] * normal for k in range(slices)]
    sops = [uid(f"made{k}") for k in range(slices)]
    write_ct(folder / "ct", rows, columns, positions, list(row_direction) + list(column_direction), spacing,
             uid("made frame"), uid("made series"), uid("made study"), sops)

    def point(k, column, row):  # pixel coordinates (column, row) of slice k to patient mm
        return positions[k] + column * spacing[1] * row_direction + row * spacing[0] * column_direction

    def polygon(k, vertices):
        return np.array([point(k, c, r) for c, r in vertices])

    exact = {}
    square = np.zeros((slices, rows, columns), np.uint8)
    ring = np.zeros_like(square)
    rois = {"Square": [], "Ring": [], "Disc": [], "Marker": [], "Line": []}
    for k in range(1, 5):
        c0, r0, c1, r1 = 2 + k, 3, 10 + k, 9 + k // 2  # pixel ranges [c0, c1) x [r0, r1)
        rois["Square"].append(("CLOSED_PLANAR", polygon(k, [(c0 - .5, r0 - .5), (c1 - .5, r0 - .5), (c1 - .5, r1 - .5),
                                                              (c0 - .5, r1 - .5)]), sops[k]))
        square[k, r0:r1, c0:c1] = 1
        rois["Ring"].append(("CLOSED_PLANAR", polygon(k, [(12.5, 9.5), (22.5, 9.5), (22.5, 18.5), (12.5, 18.5)]), sops[k]))
        rois["Ring"].append(("CLOSED_PLANAR", polygon(k, [(15.5, 12.5), (19.5, 12.5), (19.5, 15.5), (15.5, 15.5)]), sops[k]))
        ring[k, 10:19, 13:23] = 1
        ring[k, 13:16, 16:20] = 0
    for k in range(0, 6):
        angles = np.linspace(0, 2 * math.pi, 48, endpoint=False)
        radius = 3 + 0.7 * k
        rois["Disc"].append(("CLOSED_PLANAR", polygon(k, [(12 + radius * math.cos(a), 10 + radius * math.sin(a))
                                                          for a in angles]), sops[k]))
    rois["Marker"].append(("POINT", polygon(2, [(5, 5)]), sops[2]))
    rois["Line"].append(("OPEN_PLANAR", polygon(3, [(1, 1), (8, 2), (12, 6)]), sops[3]))
    exact["Square"], exact["Ring"] = square, ring
    colors = {"Square": (255, 0, 0), "Ring": (0, 255, 0), "Disc": (0, 0, 255), "Marker": (255, 255, 0),
              "Line": (0, 255, 255)}
    ct_files = sorted((folder / "ct").glob("*.dcm"))
    structure_set(ct_files, [(name, colors[name], contours) for name, contours in rois.items()], folder / "RS.dcm",
                  references=references)
    return exact


def dicompyler_case(example, folder):
    rtss = pydicom.dcmread(example / "rtss.dcm")
    by_sop = {}
    for roi_contour in rtss.ROIContourSequence:
        for contour in roi_contour.get("ContourSequence", []):
            if "ContourImageSequence" in contour:
                by_sop.setdefault(contour.ContourImageSequence[0].ReferencedSOPInstanceUID, float(contour.ContourData[2]))
    ordered = sorted(by_sop.items(), key=lambda item: item[1])
    middle = len(ordered) // 2
    kept = ordered[middle - 10:middle + 10]
    ct = pydicom.dcmread(example / "ct.0.dcm")
    factor = 4
    rows, columns = ct.Rows // factor, ct.Columns // factor
    spacing = (float(ct.PixelSpacing[0]) * factor, float(ct.PixelSpacing[1]) * factor, 3.0)
    x0, y0 = float(ct.ImagePositionPatient[0]), float(ct.ImagePositionPatient[1])
    # The centre of the first coarse pixel is the centre of the first 4 x 4 block of the original grid.
    shift = (factor - 1) / 2
    first = (x0 + shift * float(ct.PixelSpacing[1]), y0 + shift * float(ct.PixelSpacing[0]))
    positions = [np.array([first[0], first[1], z]) for _, z in kept]
    coarse = ct.pixel_array.reshape(rows, factor, columns, factor).mean(axis=(1, 3)).astype(np.int16)
    reference = rtss.ReferencedFrameOfReferenceSequence[0]
    series_uid = reference.RTReferencedStudySequence[0].RTReferencedSeriesSequence[0].SeriesInstanceUID
    write_ct(folder / "ct", rows, columns, positions, [1, 0, 0, 0, 1, 0], spacing, reference.FrameOfReferenceUID,
             series_uid, rtss.StudyInstanceUID, [sop for sop, _ in kept], pixels=[coarse] * len(kept))
    keep = {sop for sop, _ in kept}
    pruned = copy.deepcopy(rtss)
    for roi_contour in pruned.ROIContourSequence:
        if "ContourSequence" in roi_contour:
            roi_contour.ContourSequence = Sequence([
                c for c in roi_contour.ContourSequence
                if "ContourImageSequence" in c and c.ContourImageSequence[0].ReferencedSOPInstanceUID in keep])
    pruned.save_as(folder / "RS.dcm")
    return {}


def plastimatch(case_folder):
    """plastimatch's masks on the referenced CT's grid, contours of one slice combined by exclusive or
    (`--xor-contours`: inner contours cut holes; without it plastimatch takes their union)."""
    with tempfile.TemporaryDirectory() as temporary:
        subprocess.run(["plastimatch", "convert", "--input", str(case_folder / "RS.dcm"), "--referenced-ct",
                        str(case_folder / "ct"), "--output-prefix", temporary, "--prefix-format", "nii.gz", "--xor-contours"],
                       check=True, capture_output=True)
        masks = {}
        for file in pathlib.Path(temporary).glob("*.nii.gz"):
            masks[file.name[:-len(".nii.gz")]] = sitk.GetArrayFromImage(sitk.ReadImage(str(file))).astype(np.uint8)
        return masks


def series_order(case_folder):
    """The CT files in SliceLab's (and ITK's) slice order: along the normal."""
    files = sorted((case_folder / "ct").glob("*.dcm"))
    datasets = [pydicom.dcmread(f) for f in files]
    o = np.array(datasets[0].ImageOrientationPatient, float)
    normal = np.cross(o[:3], o[3:])
    return sorted(datasets, key=lambda d: float(np.dot(normal, np.array(d.ImagePositionPatient, float))))


def rt_utils_masks(case_folder):
    from rt_utils import RTStructBuilder
    rt = RTStructBuilder.create_from(str(case_folder / "ct"), str(case_folder / "RS.dcm"))
    order = [d.SOPInstanceUID for d in series_order(case_folder)]
    rt_order = [d.SOPInstanceUID for d in rt.series_data]
    masks = {}
    for name in rt.get_roi_names():
        try:
            mask = rt.get_roi_mask_by_name(name)  # rows, columns, slices in rt-utils' series order
        except Exception:  # POINT and OPEN contours
            continue
        masks[name] = np.stack([mask[:, :, rt_order.index(sop)] for sop in order]).astype(np.uint8)
    return masks


def main():
    example, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    cases = {"made": made_case(out / "made", True), "position_only": made_case(out / "position_only", False),
             "aligned": made_case(out / "aligned", True, tilt=False),
             "dicompyler": dicompyler_case(example, out / "dicompyler")}
    with h5py.File(out / "goldens.h5", "w") as goldens:
        for package in ("plastimatch", "rt-utils", "pydicom", "SimpleITK", "numpy"):
            goldens.attrs[package] = importlib.metadata.version(package)
        goldens.attrs["plastimatch_binary"] = subprocess.run(
            ["plastimatch", "--version"], capture_output=True, text=True).stdout.strip()
        for case, exact in cases.items():
            folder = out / case
            peers = {"plastimatch": plastimatch(folder)}
            # rt-utils 1.2.7 reads axis-aligned series only (its masks of the tilted one disagree with the known
            # ones), not position-only references, and fails on the dicompyler set's unmatched references.
            if case == "aligned":
                peers["rtutils"] = {k: v for k, v in rt_utils_masks(folder).items() if k not in ("Marker", "Line")}
            for peer, masks in peers.items():
                for name, mask in masks.items():
                    goldens.create_dataset(f"{case}/{name}/{peer}", data=mask, compression="gzip")
            for name, mask in exact.items():
                goldens.create_dataset(f"{case}/{name}/exact", data=mask, compression="gzip")
    print(f"wrote {', '.join(cases)} to {out}")


if __name__ == "__main__":
    main()
