"""Classical baseline vs its peers, measured in the same run (issue #6).

  1. k-means K=4 on a 512x512 RGB image (space rgb, features in [0, 1]) vs sklearn KMeans(n_init=1)
  2. multi-Otsu K=4 on a 512x512 16-bit CT-like slice vs skimage.filters.threshold_multiotsu
  3. connected components of a 512x512 class map and a 256^3 class volume vs skimage.measure.label
  4. (informative) fuzzy c-means and the Gaussian mixture, K=4 in L*a*b* on the same RGB image, vs
     skfuzzy.cluster.cmeans (m=2, error=1e-5, maxiter=300) and sklearn GaussianMixture(n_init=1)

How SliceLab is timed: the release `slicelab cluster` is run end to end (process wall time, including
loading the PNG/HDF5 and writing the HDF5) AND, from the same runs, the per-stage seconds it prints on stderr
when SLICELAB_TIMINGS is set ("timing cluster …" is the algorithm alone, "timing regions …" the connected
components alone). The ratio is peer algorithm time / SliceLab algorithm time (the like-for-like number);
end-to-end times are printed beside it. Each timing is the best of REPEATS runs.
Run: `make bench` (or `.venv/bin/python Benchmarks/bench_classical.py` after `swift build -c release`).
"""
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

REPEATS = 3
SEED = 6
root = pathlib.Path(__file__).resolve().parents[1]
binary = os.environ.get("SLICELAB_BINARY", str(root / ".build/release/slicelab"))

try:
    import skfuzzy
    import skimage
    import sklearn
    from skimage import color, filters, measure
    from sklearn.cluster import KMeans
    from sklearn.mixture import GaussianMixture
except ImportError as error:  # the peers are installed by `make bench` from Benchmarks/requirements.txt
    print(f"bench_classical: peer missing ({error}); install Benchmarks/requirements.txt")
    sys.exit(1)


def slicelab(arguments):
    """Runs slicelab cluster; returns (wall seconds, {stage: seconds}, output)."""
    environment = dict(os.environ, SLICELAB_TIMINGS="1")
    start = time.perf_counter()
    done = subprocess.run([binary, "cluster", *arguments], capture_output=True, text=True, env=environment)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"slicelab failed: {done.stderr.strip()}")
    stages = {}
    for line in done.stderr.splitlines():
        if line.startswith("timing "):
            _, stage, seconds = line.split()
            stages[stage] = float(seconds)
    return wall, stages


def best_slicelab(arguments, repeats=REPEATS):
    runs = [slicelab(arguments) for _ in range(repeats)]
    return min(r[0] for r in runs), {k: min(r[1][k] for r in runs) for k in runs[0][1]}


def best(function, repeats=REPEATS):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), result


def write_png(path, array):
    # Minimal PNG writer via h5py-free route: use skimage.io (imageio) which the peers bring.
    from skimage import io
    io.imsave(path, array, check_contrast=False)


def main():
    if not pathlib.Path(binary).exists():
        raise SystemExit(f"no release build at {binary}; run `swift build -c release`")
    print(f"peers: scikit-image {skimage.__version__}, scikit-learn {sklearn.__version__}, "
          f"scikit-fuzzy {skfuzzy.__version__}, numpy {np.__version__}; "
          f"cores {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}; best of {REPEATS}")
    rng = np.random.default_rng(SEED)
    work = pathlib.Path(tempfile.mkdtemp(prefix="bench-classical-"))

    # 1. k-means on a 512x512 RGB image: four colored regions plus noise.
    yy, xx = np.mgrid[0:512, 0:512]
    rgb = np.zeros((512, 512, 3), np.float64)
    rgb[:] = (200, 60, 50)
    rgb[yy + xx > 500] = (40, 170, 70)
    rgb[(yy - 256) ** 2 + (xx - 256) ** 2 < 120 ** 2] = (40, 50, 210)
    rgb[(yy < 150) & (xx > 350)] = (230, 230, 210)
    rgb = np.clip(rgb + rng.normal(0, 25, rgb.shape), 0, 255).astype(np.uint8)
    png = work / "rgb.png"
    write_png(png, rgb)
    out = work / "kmeans.h5"
    wall, stages = best_slicelab([str(png), "--method", "kmeans", "--classes", "4", "--space", "rgb",
                                  "--n-init", "1", "--seed", "0", "--out", str(out)])
    with h5py.File(out) as f:
        ours = float(f.attrs["inertia"])
    features = rgb.reshape(-1, 3).astype(np.float64) / 255
    peer_time, model = best(lambda: KMeans(n_clusters=4, n_init=1, random_state=0).fit(features))
    print(f"kmeans K=4 512x512 RGB: slicelab {stages['cluster']:.3f} s (end to end {wall:.3f} s), "
          f"sklearn {peer_time:.3f} s, ratio {peer_time / stages['cluster']:.2f}x; "
          f"inertia slicelab {ours:.4f} vs sklearn {model.inertia_:.4f} ({(ours / model.inertia_ - 1) * 100:+.3f} %)")

    # 4. fuzzy c-means and the Gaussian mixture in L*a*b* (single runs: each takes seconds).
    lab = color.rgb2lab(rgb).reshape(-1, 3)
    for method in ["fcm", "gmm"]:
        out = work / f"{method}.h5"
        wall, stages = slicelab([str(png), "--method", method, "--classes", "4", "--space", "lab", "--n-init", "1",
                                 "--out", str(out)])
        with h5py.File(out) as f:
            iterations = int(f.attrs["iterations"])
        start = time.perf_counter()
        if method == "fcm":
            *_, peer_iterations, _ = skfuzzy.cluster.cmeans(lab.T, 4, 2.0, error=1e-5, maxiter=300, seed=0)
            peer = "skfuzzy cmeans"
        else:
            peer_iterations = GaussianMixture(4, n_init=1, random_state=0).fit(lab).n_iter_
            peer = "sklearn GaussianMixture"
        peer_time = time.perf_counter() - start
        print(f"{method} K=4 512x512 lab: slicelab {stages['cluster']:.3f} s ({iterations} iterations; end to end "
              f"{wall:.3f} s), {peer} {peer_time:.3f} s ({peer_iterations} iterations), "
              f"ratio {peer_time / stages['cluster']:.2f}x")

    # 2. multi-Otsu K=4 on a 512x512 16-bit slice: tissue classes over ~1000 gray levels.
    slice16 = np.full((512, 512), 1000.0)
    slice16[(yy - 256) ** 2 / 230 ** 2 + (xx - 256) ** 2 / 200 ** 2 < 1] = 1400
    slice16[(yy - 256) ** 2 / 150 ** 2 + (xx - 256) ** 2 / 120 ** 2 < 1] = 1550
    slice16[(yy - 300) ** 2 + (xx - 220) ** 2 < 40 ** 2] = 1850
    slice16 = np.clip(slice16 + rng.normal(0, 40, slice16.shape), 0, 65535).astype(np.uint16)
    h5 = work / "slice16.h5"
    with h5py.File(h5, "w") as f:
        f["image"] = slice16.astype(np.float32)  # integral values: histogrammed one bin per integer, as uint16
    out = work / "multiotsu.h5"
    wall, stages = best_slicelab([str(h5), "--method", "multiotsu", "--classes", "4", "--out", str(out)])
    with h5py.File(out) as f:
        ours = f["thresholds"][:]
    peer_time, theirs = best(lambda: filters.threshold_multiotsu(slice16, classes=4))
    print(f"multiotsu K=4 512x512 uint16 ({slice16.max() - slice16.min() + 1} bins): slicelab {stages['cluster']:.3f} s "
          f"(end to end {wall:.3f} s), skimage {peer_time:.3f} s, ratio {peer_time / stages['cluster']:.2f}x; "
          f"thresholds equal: {np.array_equal(ours, theirs)} {ours.tolist()} vs {theirs.tolist()}")

    # 3. connected components: the class map of a 512x512 image and of a 256^3 volume (otsu into 2 classes
    # of blobby noise), both connectivities; the peer labels the very map slicelab wrote.
    for shape in [(512, 512), (256, 256, 256)]:
        noise = rng.normal(0, 1, shape).astype(np.float32)
        from scipy import ndimage
        smooth = ndimage.gaussian_filter(noise, 2)
        path = work / f"cc{len(shape)}.h5"
        with h5py.File(path, "w") as f:
            f["image"] = smooth
        for connectivity in [1, len(shape)]:
            out = work / f"cc{len(shape)}_{connectivity}.h5"
            flag = "1" if connectivity == 1 else "2"
            # Millisecond timings on a shared machine are noisy: more repeats for the 2-D map.
            repeats = 15 if len(shape) == 2 else REPEATS
            wall, stages = best_slicelab([str(path), "--method", "otsu", "--classes", "2", "--connectivity", flag,
                                          "--out", str(out)], repeats)
            with h5py.File(out) as f:
                labels = f["labels"][:]
                regions = f["regions"][:]
            peer_time, theirs = best(lambda: measure.label(labels, background=-1, connectivity=connectivity), repeats)
            same = np.array_equal(regions, theirs)
            name = "x".join(map(str, shape))
            print(f"label {name} connectivity {connectivity}: slicelab {stages['regions']:.4f} s "
                  f"(whole run {wall:.3f} s), skimage {peer_time:.4f} s, ratio {peer_time / stages['regions']:.2f}x; "
                  f"{theirs.max()} regions, identical ids: {same}")


if __name__ == "__main__":
    main()
