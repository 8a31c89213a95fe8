"""Reads built cases back with pydicom and Pillow, checks their geometry, and renders image | overlay PNGs
for a person to look at."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pydicom
from PIL import Image

#: Overlay colours per class value: background transparent, GM green, WM blue, lesion red.
COLOURS = {1: (40, 200, 60), 2: (60, 120, 255), 3: (255, 40, 40)}


class PreviewError(RuntimeError):
    pass


def read_case(set_dir: Path, case: str) -> tuple[np.ndarray, np.ndarray, pydicom.Dataset]:
    """The case's physical image (stored * RescaleSlope + RescaleIntercept) and its label map."""
    path = set_dir / "images" / f"{case}.dcm"
    ds = pydicom.dcmread(path)
    pixels = ds.pixel_array.astype(np.float64) * float(ds.RescaleSlope) + float(ds.RescaleIntercept)
    labels = np.asarray(Image.open(set_dir / "labels" / f"{case}.png"))
    if labels.shape != pixels.shape:
        raise PreviewError(f"{case}: label shape {labels.shape} differs from image shape {pixels.shape}")
    if ds.PhotometricInterpretation != "MONOCHROME2" or ds.BitsAllocated != 16:
        raise PreviewError(f"{path}: expected 16-bit MONOCHROME2")
    if [float(v) for v in ds.ImageOrientationPatient] != [1, 0, 0, 0, 1, 0]:
        raise PreviewError(f"{path}: unexpected ImageOrientationPatient {ds.ImageOrientationPatient}")
    return pixels, labels, ds


def render(set_dir: Path, case: str, out_path: Path, scale: int = 2) -> None:
    """Writes [windowed image | image with label overlay] side by side, upscaled by `scale`."""
    pixels, labels, ds = read_case(set_dir, case)
    low, high = np.percentile(pixels, [0.5, 99.5])
    gray = np.clip((pixels - low) / max(high - low, 1e-9) * 255, 0, 255).astype(np.uint8)
    rgb = np.stack([gray] * 3, axis=-1).astype(np.float64)
    overlay = rgb.copy()
    for value, colour in COLOURS.items():
        mask = labels == value
        overlay[mask] = 0.55 * overlay[mask] + 0.45 * np.array(colour)
    panel = np.concatenate([rgb, np.full((rgb.shape[0], 4, 3), 255.0), overlay], axis=1).astype(np.uint8)
    image = Image.fromarray(panel, mode="RGB")
    image = image.resize((image.width * scale, image.height * scale), Image.NEAREST)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    image.save(out_path)
