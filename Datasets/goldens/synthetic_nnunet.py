"""The synthetic nnU-Net set of Tests/SliceLabTests/DatasetFixtures.swift, shared by the golden scripts that
measure it (dataset_metrics_goldens.py, fingerprint_goldens.py): 8 x 16 x 16 (z, y, x) label volumes with
spacing (3.0, 0.75, 1.25) mm, a sphere (class 1) and a box (class 2), the same integer formulas as the Swift
fixture."""
import numpy as np

SHAPE = (8, 16, 16)  # z, y, x
SPACING = (3.0, 0.75, 1.25)


def reference(k):
    z, y, x = np.meshgrid(*[np.arange(n) for n in SHAPE], indexing="ij")
    labels = np.zeros(SHAPE, np.uint8)
    cz, cy, cx = 3 + k % 2, 6, 5 + k
    labels[4 * (z - cz) ** 2 + (y - cy) ** 2 + (x - cx) ** 2 <= 16] = 1
    labels[(z >= 1) & (z <= 5) & (y >= 11) & (y <= 14) & (x >= 8 + k % 3) & (x <= 14)] = 2
    return labels
