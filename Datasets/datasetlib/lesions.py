"""Synthetic tumour-like lesions on a T1 slice: an irregular outline (a random low-order radial Fourier
profile plus smooth boundary noise), a contrast-enhancing rim around a darker necrotic core, a T1-hypointense
oedema that fades with distance and spreads mostly through white matter, and partial-volume edges (the
pixel's covered fraction blends lesion and tissue). The label is the tumour (rim and core) where its covered
fraction is >= 0.5; oedema keeps its tissue label."""

from __future__ import annotations

import numpy as np
from scipy import ndimage

LESION = 3


def _smooth_noise(rng: np.random.Generator, shape: tuple, sigma: float) -> np.ndarray:
    field = ndimage.gaussian_filter(rng.standard_normal(shape), sigma, mode="reflect")
    return field / max(float(field.std()), 1e-12)


def _one_lesion(anatomy: np.ndarray, labels: np.ndarray, wm: np.ndarray, brain: np.ndarray,
                reference: float, rng: np.random.Generator, occupied: np.ndarray) -> tuple | None:
    depth = ndimage.distance_transform_edt(brain & ~occupied)
    radius = float(rng.uniform(4.0, 16.0))
    while radius >= 3.0:
        candidates = np.argwhere(depth >= radius * 1.15 + 2.0)
        if len(candidates):
            break
        radius *= 0.8
    else:
        return None
    weights = 0.2 + wm[candidates[:, 0], candidates[:, 1]]          # gliomas favour white matter
    centre = candidates[rng.choice(len(candidates), p=weights / weights.sum())].astype(float)
    centre += rng.uniform(-0.5, 0.5, 2)

    rows, cols = np.indices(anatomy.shape, dtype=float)
    dy, dx = rows - centre[0], cols - centre[1]
    rho, theta = np.hypot(dy, dx), np.arctan2(dy, dx)
    profile = np.ones_like(theta)
    for order in range(2, 7):
        profile += rng.uniform(0.0, 0.30 / order) * np.cos(order * theta + rng.uniform(0, 2 * np.pi))
    outline = radius * profile * (1.0 + 0.10 * _smooth_noise(rng, anatomy.shape, 2.5))
    distance = rho - outline                                          # pixels, negative inside the tumour
    covered = np.clip(0.5 - distance, 0.0, 1.0)                       # partial volume over one pixel
    covered *= np.clip(2.0 * ndimage.gaussian_filter(brain.astype(float), 1.0), 0.0, 1.0)  # stays in brain

    rim = float(rng.uniform(1.5, 3.5))
    enhancing = reference * float(rng.uniform(1.12, 1.35))
    necrotic = reference * float(rng.uniform(0.30, 0.50))
    if radius > 6.0 and rng.uniform() < 0.8:
        inner = np.clip(0.5 + (distance + rim), 0.0, 1.0)             # 1 in the rim, 0 in the core
        tumour = necrotic + (enhancing - necrotic) * inner
    else:
        tumour = np.full(anatomy.shape, enhancing)
    tumour = tumour * (1.0 + 0.05 * _smooth_noise(rng, anatomy.shape, 1.5))

    reach = radius * float(rng.uniform(0.6, 1.4))
    spread = (0.25 + 0.75 * wm) * np.clip(1.0 + 0.35 * _smooth_noise(rng, anatomy.shape, 3.0), 0.0, None)
    oedema = np.exp(-np.clip(distance, 0.0, None) / reach) * np.clip(spread, 0.0, 1.3) * brain
    tissue = anatomy * (1.0 - float(rng.uniform(0.25, 0.40)) * np.clip(oedema, 0.0, 1.0))

    blended = (1.0 - covered) * tissue + covered * tumour
    mask = covered >= 0.5
    return blended.astype(np.float32), mask, {"centre_rc": [round(float(c), 2) for c in centre],
                                             "radius_mm": round(radius, 2), "pixels": int(mask.sum())}


def insert_lesions(case, anatomy: np.ndarray, labels: np.ndarray, gm: np.ndarray, wm: np.ndarray,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, dict]:
    """One lesion (two with probability 0.25) inside the brain of the slice; labels 3 where tumour."""
    brain = labels > 0
    reference = float(np.median(anatomy[labels == 2])) if np.any(labels == 2) else float(anatomy.max())
    count = 2 if rng.uniform() < 0.25 else 1
    labels = labels.copy()
    occupied = np.zeros(labels.shape, dtype=bool)
    placed = []
    for _ in range(count):
        result = _one_lesion(anatomy, labels, wm, brain, reference, rng, occupied)
        if result is None:
            continue
        anatomy, mask, info = result
        labels[mask] = LESION
        occupied |= ndimage.binary_dilation(mask, iterations=6)
        placed.append(info)
    if not placed:
        raise RuntimeError(f"{case.name}: no room for a lesion in this slice")
    return anatomy, labels, {"lesions": placed}
