"""Regenerates Tests/SliceLabTests/Fixtures/fingerprint_goldens.json: the dataset fingerprint that `train`
plans from (`DatasetFingerprint`), computed independently with numpy and scipy on the synthetic nnU-Net set of
`DatasetFixtures.swift` (cases 0-3, the same integer formulas as below and as dataset_metrics_goldens.py),
spacing (z, y, x) = (3.0, 0.75, 1.25) mm, channel 0 "CT" and channel 1 "noise".

Per class c in 1, 2: the cases and slices holding it; its structures, the connected components of the volume
(scipy.ndimage.label with its default structure, face neighbours), each sized by its largest cross-section in
one slice; the smallest in pixels and in mm^2; and the median over the cases of each case's smallest
significant structure ("typical": structures sorted by area, the one at which their voxels reach 5 % of the
class's voxels in that case); and its typical thickness, the median over the cases of each case's median
local thickness over the class's pixels, slice by slice (`local_thickness` below: Hildebrand & Ruegsegger's
largest inscribed disc covering each pixel, with SciPy's exact Euclidean distance transform; thickness beyond
the cap counts as the cap). The local thickness maps of a few drawn masks (`THICKNESS_MASKS`) are stored too,
pixel by pixel, at the default cap and at cap 8. Per channel: foreground (label > 0) voxels, every k-th in (z, y, x)
order with k = ceil(count / cap) per case, pooled; mean, std (ddof 0), numpy's percentiles 0.5 and 99.5
(linear), min and max; for cap = 100000 (all voxels) and cap = 50.

Run:  python3 -m venv /tmp/fp-venv && /tmp/fp-venv/bin/pip install -r Datasets/goldens/requirements-fingerprint.txt
      /tmp/fp-venv/bin/python Datasets/goldens/fingerprint_goldens.py
"""
import json
import math
import pathlib
from importlib.metadata import version

import numpy as np
from scipy import ndimage

from synthetic_nnunet import SHAPE, SPACING, reference

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "Tests/SliceLabTests/Fixtures/fingerprint_goldens.json"
CASES = 4


def image(k, channel):
    z, y, x = np.meshgrid(*[np.arange(n) for n in SHAPE], indexing="ij")
    texture = ((x * 7 + y * 3 + z * 5 + k) % 11).astype(np.float32)
    labels = reference(k).astype(np.float32)
    return labels * 100 + texture if channel == 0 else 50 - labels * 20 + texture


def significant(areas, voxels, share=0.05):
    """The area of the structure at which the structures, smallest area first, reach `share` of the voxels."""
    order = sorted(range(len(areas)), key=lambda i: (areas[i], voxels[i]))
    cumulative = np.cumsum([voxels[i] for i in order])
    return areas[order[int(np.argmax(cumulative >= share * cumulative[-1]))]]


THICKNESS_CAP = 128.0

# Drawn masks ('#' inside): a one-pixel line, a strip 3 pixels wide, a disc, a square, an L of two widths.
THICKNESS_MASKS = {
    "shapes": [
        "................................",
        ".##########################.....",
        "................................",
        "..#######################.......",
        "..#######################.......",
        "..#######################.......",
        "................................",
        "....#####.......############....",
        "...#######......############....",
        "..#########.....############....",
        "..#########.....############....",
        "..#########.....############....",
        "...#######......############....",
        "....#####.......############....",
        "................############....",
        "................############....",
        "................############....",
        "................................",
        "..##############................",
        "..##############................",
        "..##############................",
        "..####..........................",
        "..####..........................",
        "..####..........................",
    ],
    "touching-edges": [
        "########",
        "########",
        "########",
        "###.....",
        "###.....",
    ],
}


def squared_distance(to_set, outside_is_set):
    """Exact squared Euclidean distance of every pixel to the nearest pixel of `to_set` (integers, from SciPy's
    nearest-pixel indices); with `outside_is_set` the pixels just beyond the edges belong to the set."""
    grid = np.pad(to_set, 1, constant_values=True) if outside_is_set else to_set
    if not grid.any():
        return None
    _, (iy, ix) = ndimage.distance_transform_edt(~grid, return_indices=True)
    y, x = np.indices(grid.shape)
    d2 = (iy - y) ** 2 + (ix - x) ** 2
    return d2[1:-1, 1:-1] if outside_is_set else d2


def local_thickness(mask, cap=THICKNESS_CAP):
    """Local thickness (nan outside the mask, inf beyond the cap), the rules of LocalThickness.swift."""
    d2 = squared_distance(~mask, outside_is_set=True)
    r = cap / 2
    wide = mask & (d2 >= r * r)
    to_wide = squared_distance(wide, outside_is_set=False)
    thickness = np.full(mask.shape, np.nan)
    thickness[mask] = 2 * np.sqrt(d2[mask].astype(np.float64)) - 1
    if to_wide is not None:
        thickness[mask & (to_wide < r * r)] = np.inf
    ridge = mask & (d2 >= ndimage.maximum_filter(d2, size=3, mode="constant", cval=0))
    h, w = mask.shape
    for y, x in zip(*np.nonzero(ridge & np.isfinite(thickness))):
        squared = int(d2[y, x])
        diameter = 2 * np.sqrt(float(squared)) - 1
        reach = int(np.ceil(np.sqrt(float(squared))))
        for qy in range(max(0, y - reach), min(h - 1, y + reach) + 1):
            for qx in range(max(0, x - reach), min(w - 1, x + reach) + 1):
                if (qy - y) ** 2 + (qx - x) ** 2 < squared and thickness[qy, qx] < diameter:
                    thickness[qy, qx] = diameter
    return thickness


def median_thickness(mask3d):
    values = [np.minimum(local_thickness(plane)[plane], THICKNESS_CAP) for plane in mask3d if plane.any()]
    return float(np.median(np.concatenate(values)))


def thickness_maps():
    out = {}
    for name, rows in THICKNESS_MASKS.items():
        mask = np.array([[c == "#" for c in row] for row in rows])
        for cap in (THICKNESS_CAP, 8.0):
            t = local_thickness(mask, cap)
            out[f"{name}@{cap:g}"] = {"rows": rows, "cap": cap,
                                      "thickness": [[None if np.isnan(v) else (-1 if np.isinf(v) else float(v))
                                                     for v in row] for row in t]}
    return out


def classes():
    rows = []
    pixel_mm2 = SPACING[1] * SPACING[2]
    for c in (1, 2):
        case_count = slice_count = component_count = 0
        smallest, typical, thickness = [], [], []
        for k in range(CASES):
            mask = reference(k) == c
            slice_count += int(mask.any(axis=(1, 2)).sum())
            components, n = ndimage.label(mask)  # 3-D, face neighbours (the default structure)
            # a structure's in-plane size: its largest cross-section in one slice
            areas = [int(np.max((components == i).sum(axis=(1, 2)))) for i in range(1, n + 1)]
            voxels = [int((components == i).sum()) for i in range(1, n + 1)]
            component_count += n
            if areas:
                case_count += 1
                smallest.append(min(areas))
                typical.append(significant(areas, voxels))
                thickness.append(median_thickness(mask))
        rows.append({"label": c, "case_count": case_count, "slice_count": slice_count,
                     "component_count": component_count,
                     "smallest_area_pixels": float(min(smallest)),
                     "smallest_area_mm2": float(min(smallest)) * pixel_mm2,
                     "typical_smallest_area_pixels": float(np.median(typical)),
                     "typical_smallest_area_mm2": float(np.median(typical)) * pixel_mm2,
                     "typical_smallest_diameter_pixels": 2 * math.sqrt(float(np.median(typical)) / math.pi),
                     "typical_thickness_pixels": float(np.median(thickness))})
    return rows


def intensities(cap):
    rows = []
    for channel in (0, 1):
        pooled = []
        for k in range(CASES):
            values = image(k, channel)[reference(k) > 0]  # C order: (z, y, x)
            step = max(1, -(-values.size // cap))
            pooled.append(values[::step])
        values = np.concatenate(pooled).astype(np.float64)
        rows.append({"channel": channel, "sampled_voxels": int(values.size), "mean": float(values.mean()),
                     "std": float(values.std()), "percentile_00_5": float(np.percentile(values, 0.5)),
                     "percentile_99_5": float(np.percentile(values, 99.5)),
                     "min": float(values.min()), "max": float(values.max())})
    return rows


def main():
    out = {"generated_by": "Datasets/goldens/fingerprint_goldens.py",
           "versions": {name: version(name) for name in ("numpy", "scipy")},
           "cases": [f"case_{k:03d}" for k in range(CASES)], "shape_zyx": SHAPE, "spacing_zyx": SPACING,
           "classes": classes(), "local_thickness": thickness_maps(), "intensities": {"100000": intensities(100000), "50": intensities(50)}}
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
