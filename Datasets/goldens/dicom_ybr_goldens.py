"""Goldens for the lossy YBR JPEG files where SliceLab's RGB differs from pydicom's by 2: the decoded Y, Cb, Cr
samples before any colour conversion, as pydicom 3 with pylibjpeg-libjpeg (Thomas Richter's libjpeg) gives them
(`pixel_array(ds, as_rgb=False)`, which decodes with libjpeg's colour transform off).

SliceLab decodes with DCMTK's IJG 6b (colour conversion off) and converts YBR_FULL to RGB with pydicom's arithmetic.
The two decoders upsample 4:2:0 chroma differently: IJG's "fancy" triangle filter works on the 8-bit samples the
IDCT rounded, libjpeg's upsampler on the IDCT output before rounding (it keeps fractional bits). So Cb and Cr
differ by 1 at some pixels, Y never; the YBR→RGB matrix multiplies a Cr difference by 1.402 (red) and a Cb
difference by 1.772 (blue), which makes 2 in RGB. Tests/DICOMTests pin both facts with these goldens.

Run: /work/goldens-venv/bin/python Datasets/goldens/dicom_ybr_goldens.py
Writes Tests/DICOMTests/Fixtures/dicom_ybr_goldens.json (the samples as base64 of uint8 [rows, columns, 3]).
"""
import base64
import json
import pathlib

import libjpeg
import numpy as np
import pydicom
import pylibjpeg
from pydicom.pixels import pixel_array

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "Datasets" / "cache" / "dicom-corpus"
OUT = ROOT / "Tests" / "DICOMTests" / "Fixtures" / "dicom_ybr_goldens.json"
FILES = [
    "pydicom/pydicom/data/test_files/SC_rgb_dcmtk_+eb+cy+n1.dcm",
    "pydicom/pydicom/data/test_files/SC_rgb_dcmtk_+eb+cy+np.dcm",
    "pydicom/pydicom/data/test_files/SC_rgb_jpeg_lossy_gdcm.dcm",
]


def main():
    records = []
    for name in FILES:
        ds = pydicom.dcmread(CORPUS / name)
        ybr = np.ascontiguousarray(pixel_array(ds, as_rgb=False), dtype=np.uint8)
        rgb = np.ascontiguousarray(pixel_array(ds), dtype=np.uint8)
        records.append({"file": name, "photometric": str(ds.PhotometricInterpretation), "shape": list(ybr.shape),
                        "ybr": base64.b64encode(ybr.tobytes()).decode(),
                        "rgb": base64.b64encode(rgb.tobytes()).decode()})
    goldens = {"generator": "Datasets/goldens/dicom_ybr_goldens.py",
               "peers": {"pydicom": pydicom.__version__, "pylibjpeg": pylibjpeg.__version__,
                         "pylibjpeg-libjpeg": libjpeg.__version__, "numpy": np.__version__},
               "layout": "uint8 [rows, columns, 3], base64; ybr before colour conversion, rgb after",
               "files": records}
    OUT.write_text(json.dumps(goldens, indent=1) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes); peers {goldens['peers']}")


if __name__ == "__main__":
    main()
