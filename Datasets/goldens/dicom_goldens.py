"""Goldens for SliceLab's DICOM reader: pydicom 3 (+ pylibjpeg, pylibjpeg-libjpeg, pylibjpeg-openjpeg) decodes
every file of the corpus (Datasets/cache/dicom-corpus, fetched by `make corpus`), and this script records per
file and frame: shape, min, max, mean, a SHA-256 of the values and 64 sampled values.

Values: grayscale frames are modality values (pydicom's apply_modality_lut; for Enhanced multi-frame images
the Pixel Value Transformation functional group of the frame, else the shared one, else the top-level Rescale
Slope/Intercept, applied in float64). Colour frames are RGB (pydicom converts YBR_FULL/YBR_FULL_422 to RGB;
palette colour goes through apply_color_lut).

Hashed byte layout: the frame's values cast to float32, little endian, C order ([rows, columns] grayscale,
[rows, columns, 3] colour). `samples` holds the float32 values at flat indices k * n // 64, k = 0..63.

Run: /work/goldens-venv/bin/python Datasets/goldens/dicom_goldens.py
Writes Tests/DICOMTests/Fixtures/dicom_goldens.json.
"""
import hashlib
import json
import pathlib
import sys
import warnings

import numpy as np
import pydicom
from pydicom.pixels import apply_color_lut, apply_modality_lut

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "Datasets" / "cache" / "dicom-corpus"
OUT = ROOT / "Tests" / "DICOMTests" / "Fixtures" / "dicom_goldens.json"
SAMPLES = 64


def corpus_files():
    """Every candidate file of the corpus, relative to it, sorted (README/Python files skipped)."""
    files = []
    for path in sorted(CORPUS.rglob("*")):
        if not path.is_file() or path.suffix in {".py", ".txt", ".whl", ".json", ".gz", ".bz2", ".pyc"}:
            continue
        if path.name.startswith(("README", ".")) or "dist-info" in str(path) or "wheels" in path.parts:
            continue
        files.append(path)
    return files


def rescale_for_frame(ds, index):
    """(slope, intercept) of frame `index` from the functional groups, or None."""
    for groups in (("PerFrameFunctionalGroupsSequence", index), ("SharedFunctionalGroupsSequence", 0)):
        seq = ds.get(groups[0])
        if seq is None or len(seq) <= groups[1]:
            continue
        item = seq[groups[1]]
        pvt = item.get("PixelValueTransformationSequence")
        if pvt and "RescaleSlope" in pvt[0] and "RescaleIntercept" in pvt[0]:
            return float(pvt[0].RescaleSlope), float(pvt[0].RescaleIntercept)
    return None


def frame_record(values):
    values = np.ascontiguousarray(values, dtype="<f4")
    flat = values.reshape(-1)
    n = flat.size
    return {
        "shape": list(values.shape),
        "min": float(flat.min()),
        "max": float(flat.max()),
        "mean": float(flat.astype(np.float64).mean()),
        "sha256": hashlib.sha256(flat.tobytes()).hexdigest(),
        "samples": [float(flat[k * n // SAMPLES]) for k in range(SAMPLES)],
    }


def golden(path):
    record = {"file": str(path.relative_to(CORPUS)) if CORPUS in path.parents else path.name}
    try:
        ds = pydicom.dcmread(path, force=True)
    except Exception as error:  # noqa: BLE001 - the reason is the golden
        record.update(status="unreadable", reason=f"{type(error).__name__}: {error}")
        return record
    record["transfer_syntax"] = str(getattr(getattr(ds, "file_meta", None), "TransferSyntaxUID", "") or "")
    if "PixelData" not in ds:
        record.update(status="no_pixel_data")
        return record
    record["photometric"] = str(ds.get("PhotometricInterpretation", ""))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            array = ds.pixel_array
    except Exception as error:  # noqa: BLE001
        record.update(status="refused", reason=f"{type(error).__name__}: {error}")
        return record
    frames = int(ds.get("NumberOfFrames", 1) or 1)
    samples = int(ds.get("SamplesPerPixel", 1))
    color = samples == 3 or record["photometric"] == "PALETTE COLOR"
    if frames == 1:
        array = array[np.newaxis]
    records = []
    try:
        for index in range(frames):
            frame = array[index]
            if record["photometric"] == "PALETTE COLOR":
                frame = apply_color_lut(frame, ds)
            elif not color:
                pair = rescale_for_frame(ds, index)
                if pair is not None and "ModalityLUTSequence" not in ds:
                    frame = frame.astype(np.float64) * pair[0] + pair[1]
                else:
                    frame = apply_modality_lut(frame, ds)
            records.append(frame_record(frame))
    except Exception as error:  # noqa: BLE001
        record.update(status="refused", reason=f"{type(error).__name__}: {error}")
        return record
    record.update(status="ok", kind="rgb" if color else "modality", frames=records)
    return record


# Files pydicom refuses but can decode with help, and the help given. SliceLab decodes these on its own.
ASSISTED = {
    "pydicom-data/data_store/data/OT-PAL-8-face.dcm":
        "no Transfer Syntax UID in the meta header: pydicom told it is Implicit VR Little Endian (what DCMTK detects)",
    "pydicom/pydicom/data/test_files/JPEG-lossy.dcm":
        "pylibjpeg refuses the 12-bit lossy JPEG: decompressed with DCMTK's dcmdjpeg (the IJG decoder SliceLab also "
        "uses), so this checks SliceLab's pipeline around the decoder, not the decoder",
}


def assisted(path, relative):
    """A golden for a file pydicom refuses, decoded with the help stated in ASSISTED."""
    import subprocess
    import tempfile
    from pydicom.uid import ImplicitVRLittleEndian

    if relative.endswith("JPEG-lossy.dcm"):
        with tempfile.TemporaryDirectory() as folder:
            native = pathlib.Path(folder) / "native.dcm"
            subprocess.run(["dcmdjpeg", str(path), str(native)], check=True)
            record = golden(native)
    else:
        ds = pydicom.dcmread(path, force=True)
        ds.file_meta.TransferSyntaxUID = ImplicitVRLittleEndian
        with tempfile.TemporaryDirectory() as folder:
            fixed = pathlib.Path(folder) / "fixed.dcm"
            ds.save_as(fixed)
            record = golden(fixed)
    record["file"] = relative
    original = pydicom.dcmread(path, force=True, stop_before_pixels=True)
    record["transfer_syntax"] = str(getattr(getattr(original, "file_meta", None), "TransferSyntaxUID", "") or "")
    if record["status"] == "ok":
        record["status"] = "ok_assisted"
        record["assist"] = ASSISTED[relative]
    return record


def main():
    if not CORPUS.is_dir():
        sys.exit(f"{CORPUS} is missing: run `make corpus` first")
    import pylibjpeg, libjpeg, openjpeg  # noqa: E401 - recorded versions

    goldens = {
        "generator": "Datasets/goldens/dicom_goldens.py",
        "peers": {
            "pydicom": pydicom.__version__,
            "pylibjpeg": pylibjpeg.__version__,
            "pylibjpeg-libjpeg": libjpeg.__version__,
            "pylibjpeg-openjpeg": openjpeg.__version__,
            "numpy": np.__version__,
        },
        "layout": "float32 little-endian values, C order; samples at flat indices k*n//64",
        "files": [assisted(path, str(path.relative_to(CORPUS))) if str(path.relative_to(CORPUS)) in ASSISTED
                  else golden(path) for path in corpus_files()],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(goldens, indent=1) + "\n")
    statuses = {}
    for record in goldens["files"]:
        statuses[record["status"]] = statuses.get(record["status"], 0) + 1
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes): {statuses}; peers {goldens['peers']}")


if __name__ == "__main__":
    main()
