"""Goldens for the Classical target, computed by scikit-image, scikit-learn and scikit-fuzzy.

Run with the goldens venv:  /work/goldens-venv/bin/python Datasets/goldens/classical_goldens.py
Writes Tests/ClassicalTests/Fixtures/classical_goldens.json (peer versions recorded inside).
Every random draw is seeded (numpy.random.default_rng(SEED)).
"""
import json
import pathlib
import sys

import numpy as np
import scipy
import skfuzzy
import skimage
import sklearn
from skfuzzy.cluster import cmeans
from skimage import color, filters, measure
from sklearn.cluster import KMeans
from sklearn.mixture import GaussianMixture

SEED = 20261129
rng = np.random.default_rng(SEED)
root = pathlib.Path(__file__).resolve().parents[2]
out = root / "Tests/ClassicalTests/Fixtures/classical_goldens.json"


def flat(a):
    return np.asarray(a).reshape(-1).tolist()


goldens = {
    "generator": "Datasets/goldens/classical_goldens.py",
    "seed": SEED,
    "versions": {
        "python": sys.version.split()[0], "numpy": np.__version__, "scipy": scipy.__version__,
        "scikit-image": skimage.__version__, "scikit-learn": sklearn.__version__,
        "scikit-fuzzy": skfuzzy.__version__,
    },
}

# -- Color spaces: a 9x9x9 grid of the RGB cube (includes the corners and the gray axis) plus random points.
axis = np.linspace(0, 1, 9)
grid = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), -1).reshape(-1, 3)
rgb = np.concatenate([grid, rng.random((271, 3))]).astype(np.float64)
img = rgb.reshape(1, -1, 3)
goldens["color"] = {
    "rgb": flat(rgb),
    "gray": flat(color.rgb2gray(img)),
    "hsv": flat(color.rgb2hsv(img)),
    "lab": flat(color.rgb2lab(img)),
    "ycbcr": flat(color.rgb2ycbcr(img)),
}


# -- Otsu and multi-Otsu on 8-bit, 16-bit and float images.
def mixture(n, means, spread):
    parts = [rng.normal(m, spread, n // len(means)) for m in means]
    return np.concatenate(parts)


images = {
    # full 8-bit range: 0..255
    "uint8": np.clip(np.concatenate([mixture(3000, [30, 90, 150, 220], 14), [0, 255]]), 0, 255)
    .round().astype(np.uint8),
    # genuinely 16-bit values in a narrow window (keeps K=5 exhaustive search small in debug tests)
    "uint16": np.clip(mixture(3000, [30010, 30040, 30070, 30100], 6), 30000, 30110).round().astype(np.uint16),
    # float64: 256 bins over [min, max]
    "float64": mixture(3000, [-1.0, 0.2, 1.1, 2.5], 0.25),
}
otsu = {}
for name, values in images.items():
    entry = {"dtype": name, "values": values.tolist(), "otsu": float(filters.threshold_otsu(values))}
    for classes in range(2, 6):
        entry[f"multiotsu{classes}"] = flat(filters.threshold_multiotsu(values, classes=classes))
    otsu[name] = entry
# a degenerate image: exactly K occupied values -> thresholds are the first K-1 values
few = np.array([5, 5, 9, 9, 9, 12, 20], dtype=np.uint8)
otsu["exactlyK"] = {"dtype": "uint8", "values": few.tolist(),
                    "multiotsu4": flat(filters.threshold_multiotsu(few, classes=4))}
goldens["otsu"] = otsu

# -- k-means: well separated blobs (labels must agree up to permutation) and an overlapping cloud.
def blobs(centers, n, spread):
    return np.concatenate([rng.normal(c, spread, (n, len(c))) for c in centers])


separated = blobs([[0, 0, 0], [6, 0, 0], [0, 6, 0], [0, 0, 6]], 150, 0.5)
overlapping = blobs([[0, 0], [1.5, 0.5], [0.5, 2], [2.2, 2.2], [3, 0]], 120, 0.6)
kmeans = {}
for name, data, k in [("separated", separated, 4), ("overlapping", overlapping, 5)]:
    model = KMeans(n_clusters=k, n_init=10, random_state=0).fit(data)
    kmeans[name] = {"k": k, "dimension": data.shape[1], "data": flat(data), "inertia": float(model.inertia_),
                    "labels": model.labels_.tolist()}
goldens["kmeans"] = kmeans

# -- Fuzzy c-means from a fixed initial membership matrix (c x n, columns sum to 1).
fdata = blobs([[0, 0], [4, 1], [1, 4]], 60, 0.8)
u0 = rng.random((3, fdata.shape[0]))
u0 /= u0.sum(axis=0, keepdims=True)
cntr, u, _, _, jm, p, fpc = cmeans(fdata.T, c=3, m=2.0, error=1e-6, maxiter=300, init=u0.copy())
goldens["fcm"] = {"c": 3, "m": 2.0, "error": 1e-6, "maxiter": 300, "data": flat(fdata), "u0": flat(u0),
                  "u": flat(u), "centers": flat(cntr), "iterations": int(p), "jm_last": float(jm[-1])}

# -- Gaussian mixture (EM, k-means init) on well separated anisotropic blobs.
gdata = np.concatenate([rng.multivariate_normal([0, 0], [[1.0, 0.6], [0.6, 0.8]], 200),
                        rng.multivariate_normal([7, 1], [[0.5, -0.2], [-0.2, 0.4]], 150),
                        rng.multivariate_normal([2, 8], [[0.3, 0.0], [0.0, 1.5]], 250)])
gmm = {"data": flat(gdata), "k": 3}
for kind in ["full", "diag"]:
    model = GaussianMixture(3, covariance_type=kind, n_init=3, random_state=0, tol=1e-6, max_iter=500).fit(gdata)
    order = np.argsort(model.means_[:, 0])
    gmm[kind] = {"means": flat(model.means_[order]), "weights": flat(model.weights_[order]),
                 "covariances": flat(model.covariances_[order]),
                 "mean_log_likelihood": float(model.score(gdata)),
                 "labels": model.predict(gdata).tolist()}
goldens["gmm"] = gmm

# -- Connected components: multi-class maps, every pixel labelled (background=-1 is absent).
classes2d = (rng.random((40, 50)) * 3).astype(np.int32)
classes2d[10:30, 10:30] = 1  # a big region
classes3d = (rng.random((10, 12, 14)) < 0.45).astype(np.int32) + (rng.random((10, 12, 14)) < 0.2)
components = {"map2d": flat(classes2d), "shape2d": list(classes2d.shape),
              "map3d": flat(classes3d), "shape3d": list(classes3d.shape)}
for connectivity in [1, 2]:
    components[f"label2d_c{connectivity}"] = flat(measure.label(classes2d, background=-1, connectivity=connectivity))
for connectivity in [1, 2, 3]:
    components[f"label3d_c{connectivity}"] = flat(measure.label(classes3d, background=-1, connectivity=connectivity))
goldens["components"] = components

out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(json.dumps(goldens, separators=(",", ":")))
print(f"wrote {out} ({out.stat().st_size} bytes) with", goldens["versions"])
