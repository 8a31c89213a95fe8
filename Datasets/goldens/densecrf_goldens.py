"""Goldens for the dense CRF (Classical.DenseCRF), computed by pydensecrf (PyPI `pydensecrf2`, Krähenbühl's code).

Run with a venv holding pydensecrf2, numpy:
    python3 -m venv /work/crf-venv && /work/crf-venv/bin/pip install pydensecrf2 numpy
    /work/crf-venv/bin/python Datasets/goldens/densecrf_goldens.py
Writes Tests/ClassicalTests/Fixtures/densecrf_goldens.json (peer versions recorded inside).

Each fixture: a display image (uint8, one or three channels), class probabilities (float32, stored with 6
decimals and fed to the peer exactly as stored), the CRF parameters, and the peer's marginals after
`inference(iterations)` with unary = unary_from_softmax(p) (−log p clipped at 1e-5), a Gaussian term from
`create_pairwise_gaussian` and a bilateral term from `create_pairwise_bilateral` (positions / widths in array
axis order, then channels / intensity width), each `addPairwiseEnergy(…, compat=weight)` (Potts, DIAG_KERNEL,
NORMALIZE_SYMMETRIC). For the volume, positions are in millimetres: sdims = width / spacing per axis.
Every random draw is seeded (numpy.random.default_rng(SEED)).
"""
import json
import pathlib
import sys
from importlib import metadata

import numpy as np
import pydensecrf.densecrf as dcrf
from pydensecrf.utils import create_pairwise_bilateral, create_pairwise_gaussian, unary_from_softmax

SEED = 20261201
rng = np.random.default_rng(SEED)
root = pathlib.Path(__file__).resolve().parents[2]
out = root / "Tests/ClassicalTests/Fixtures/densecrf_goldens.json"
DEFAULTS = dict(iterations=5, gaussian_sxy=3.0, gaussian_weight=3.0, bilateral_sxy=80.0,
                bilateral_intensity=13.0, bilateral_weight=10.0)


def scene(shape, classes):
    """A label scene of discs/blobs over a background, and noisy probabilities that mostly favour it."""
    grids = np.meshgrid(*[np.arange(s, dtype=np.float64) for s in shape], indexing="ij")
    labels = np.zeros(shape, dtype=np.int64)
    for k in range(1, classes):
        centre = [rng.uniform(0.2 * s, 0.8 * s) for s in shape]
        radius = rng.uniform(0.15, 0.3) * min(shape[-2:])
        dist = np.sqrt(sum((g - c) ** 2 for g, c in zip(grids, centre)))
        labels[dist < radius] = k
    logits = rng.normal(0.0, 1.3, size=(classes,) + shape)
    for k in range(classes):
        logits[k] += 1.6 * (labels == k)
    p = np.exp(logits - logits.max(axis=0))
    p /= p.sum(axis=0)
    p = np.round(p.astype(np.float32), 6).astype(np.float32)
    return labels, p


def display(labels, channels):
    """A display image: class-dependent levels plus noise, 0–255."""
    levels = rng.uniform(30, 225, size=(labels.max() + 1, channels))
    img = levels[labels] + rng.normal(0, 18, size=labels.shape + (channels,))
    img = np.clip(np.round(img), 0, 255).astype(np.uint8)
    return img[..., 0] if channels == 1 else img


def peer(p, img, channels, params, spacing=None):
    classes, shape = p.shape[0], p.shape[1:]
    spacing = spacing or [1.0] * len(shape)
    d = dcrf.DenseCRF(int(np.prod(shape)), classes)
    d.setUnaryEnergy(np.ascontiguousarray(unary_from_softmax(p)))
    gauss = create_pairwise_gaussian([params["gaussian_sxy"] / s for s in spacing], shape)
    d.addPairwiseEnergy(np.ascontiguousarray(gauss), compat=params["gaussian_weight"])
    bilateral = create_pairwise_bilateral([params["bilateral_sxy"] / s for s in spacing],
                                          [params["bilateral_intensity"]] * channels, img,
                                          chdim=-1 if channels == 1 else img.ndim - 1)
    d.addPairwiseEnergy(np.ascontiguousarray(bilateral), compat=params["bilateral_weight"])
    q = np.array(d.inference(params["iterations"]), dtype=np.float32).reshape(classes, -1)
    return q


def fixture(name, shape, classes, channels, params=None, spacing=None):
    params = dict(DEFAULTS, **(params or {}))
    labels, p = scene(shape, classes)
    img = display(labels, channels)
    q = peer(p, img, channels, params, spacing)
    return {
        "name": name, "shape": list(shape), "spacing": spacing, "classCount": classes, "channels": channels,
        "parameters": params,
        "image": img.reshape(-1).tolist(),  # pixel-major (channels last)
        "probabilities": [round(float(v), 6) for v in p.reshape(classes, -1).T.reshape(-1)],  # pixel-major
        "marginals": [round(float(v), 7) for v in q.T.reshape(-1)],  # pixel-major
        "labels": q.argmax(axis=0).tolist(),
    }


goldens = {
    "generator": "Datasets/goldens/densecrf_goldens.py",
    "seed": SEED,
    "versions": {"python": sys.version.split()[0], "numpy": np.__version__,
                 "pydensecrf2": metadata.version("pydensecrf2")},
    "fixtures": [
        fixture("gray2d-3class", (48, 40), 3, 1),
        fixture("color2d-4class", (40, 36), 4, 3),
        fixture("gray2d-6class-custom", (32, 28), 6, 1,
                params=dict(iterations=8, gaussian_sxy=2.0, gaussian_weight=4.0, bilateral_sxy=20.0,
                            bilateral_intensity=9.0, bilateral_weight=6.0)),
        fixture("gray3d-2class-anisotropic", (6, 20, 18), 2, 1, spacing=[2.5, 0.8, 0.8],
                params=dict(gaussian_sxy=2.0, bilateral_sxy=10.0)),
    ],
}
out.write_text(json.dumps(goldens, separators=(",", ":")) + "\n")
print(f"wrote {out} ({out.stat().st_size} bytes) with pydensecrf2 {goldens['versions']['pydensecrf2']}")
