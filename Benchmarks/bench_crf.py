"""Dense CRF: SliceLab against pydensecrf2 (Krähenbühl's C++), measured in the same run (issue #24).

  1. 2-D: a 512 x 512 gray image, 21 classes, 5 iterations, pydensecrf's default widths and weights, the same
     probabilities and display image on both sides. pydensecrf is single-threaded, so for the like-for-like ratio
     both sides run pinned to the same core (BENCH_CORE, default 0: `taskset -c 0` for both), so neither gets the
     other, idler core; SliceLab's time on every core is printed beside it, against pydensecrf unpinned. Both
     sides run in a fresh process each round, so both pay for first-touching their memory (a Python process
     that ran pydensecrf before reuses its freed heap: that warm in-process time is printed too, for comparison).
  2. 3-D: a 200 x 256 x 256 volume (spacing 1.5 x 0.8 x 0.8 mm), 3 classes, 5 iterations: SliceLab's time and
     peak resident memory (GNU time's "Maximum resident set size" of the whole process, which includes reading
     the 157 MB of probabilities).

How SliceLab is timed: the release `slicelab segment --crf-input IN.h5 --marginals OUT.h5` with SLICELAB_TIMINGS
set prints "timing crf S cpu C", the CRF alone (lattices and iterations, no I/O) on the wall clock and in process
CPU time; pydensecrf is timed around DenseCRF construction, both addPairwiseEnergy calls and inference(5) (feature
creation excluded on both sides), on the wall clock and in process CPU time (`time.process_time`). The two sides
alternate, best of REPEATS each (and the median of the per-round ratios). On a machine shared with other jobs the
wall clock mostly measures waiting, so the single-thread CPU-time ratio is printed beside the wall-clock one. Every
figure carries the build of the CRF's inner loops it ran (`CDenseCRFKernels`, chosen at run time: "avx2-fma" when
the CPU has AVX2 and FMA, else "baseline", SSE2), as `slicelab --version` names it; the 2-D case is timed on both
builds in the same run (SLICELAB_CRF_KERNELS=baseline forces the baseline one). SLICELAB_BINARY picks another build
(for example main's, for a before/after; a build without that line in `--version` is reported as "swift-sse2").
`make bench` installs pydensecrf2 into .venv (Benchmarks/requirements.txt) and runs it after the release
build; alone: `.venv/bin/python Benchmarks/bench_crf.py` after `swift build -c release --product slicelab`.
"""
import os
import pathlib
import platform
import re
import subprocess
import sys
import tempfile
import time
from importlib import metadata

import h5py
import numpy as np
import pydensecrf.densecrf as dcrf
from pydensecrf.utils import create_pairwise_bilateral, create_pairwise_gaussian, unary_from_softmax

REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))
CORE = int(os.environ.get("BENCH_CORE", "0"))
root = pathlib.Path(__file__).resolve().parents[1]
binary = os.environ.get("SLICELAB_BINARY", str(root / ".build/release/slicelab"))
rng = np.random.default_rng(24)


def probabilities(classes, shape):
    logits = rng.normal(0, 1.5, size=(classes,) + shape).astype(np.float32)
    p = np.exp(logits - logits.max(axis=0))
    return (p / p.sum(axis=0)).astype(np.float32)


def write_input(path, p, image, spacing=None):
    with h5py.File(path, "w") as f:
        f["/probabilities"] = p
        f["/image"] = image[np.newaxis].astype(np.float32)
        if spacing:
            f["/image"].attrs["spacing"] = np.array(spacing, dtype=np.float64)


def kernels(environment=None):
    """The build of the CRF's inner loops that `slicelab` runs with this environment."""
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, env=environment).stdout
    line = next((l for l in version.splitlines() if l.startswith("dense CRF kernels:")), None)
    return line.split(":", 1)[1].strip() if line else "swift-sse2"


def slicelab(path, out, pin, baseline=False):
    command = (["taskset", "-c", str(CORE)] if pin else []) + ["/usr/bin/time", "-v", binary, "segment",
                                                               "--crf-input", str(path), "--marginals", str(out)]
    environment = dict(os.environ, SLICELAB_TIMINGS="1")
    if baseline:
        environment["SLICELAB_CRF_KERNELS"] = "baseline"
    result = subprocess.run(command, capture_output=True, text=True, env=environment)
    if result.returncode != 0:
        raise SystemExit(result.stderr)
    timing = re.search(r"timing crf ([0-9.e-]+)(?: cpu ([0-9.e-]+))?", result.stderr)
    seconds, cpu = float(timing.group(1)), float(timing.group(2) or "nan")
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr).group(1))
    return seconds, cpu, peak / 1024


def peer_process(path, out, pin):
    """pydensecrf's time (wall, CPU) and marginals on `path` (written by `write_input`), in a fresh Python
    process as SliceLab's runs are; `pin`: on core CORE only."""
    command = (["taskset", "-c", str(CORE)] if pin else []) + [sys.executable, __file__, "--peer", str(path),
                                                               str(out)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(result.stderr)
    seconds, cpu = (float(v) for v in result.stdout.split())
    return seconds, cpu, np.load(out)


def peer(p, image):
    """pydensecrf's time (wall, CPU) and marginals in this process."""
    classes, shape = p.shape[0], p.shape[1:]
    unary = np.ascontiguousarray(unary_from_softmax(p))
    gauss = np.ascontiguousarray(create_pairwise_gaussian((3, 3), shape))
    bilateral = np.ascontiguousarray(create_pairwise_bilateral((80, 80), (13,), image, chdim=-1))
    start, cpu = time.perf_counter(), time.process_time()
    d = dcrf.DenseCRF(int(np.prod(shape)), classes)
    d.setUnaryEnergy(unary)
    d.addPairwiseEnergy(gauss, compat=3)
    d.addPairwiseEnergy(bilateral, compat=10)
    q = np.array(d.inference(5))
    return time.perf_counter() - start, time.process_time() - cpu, q.reshape((classes,) + shape)


def main():
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    isa = next((l for l in version if l.startswith("oneDNN ISA")), "oneDNN ISA: ?")
    print(f"slicelab: {version[0]}, {isa}")
    print(f"CPU: {cpu}, {os.cpu_count()} logical cores; {platform.python_version()}, "
          f"pydensecrf2 {metadata.version('pydensecrf2')}, numpy {np.__version__}; best of {REPEATS}")
    print("load average at start (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        shape = (512, 512)
        p = probabilities(21, shape)
        yy, xx = np.mgrid[0:512, 0:512]
        image = np.clip(128 + 90 * np.sin(xx / 40) * np.cos(yy / 55) + rng.normal(0, 10, shape), 0, 255)
        image = image.astype(np.uint8)
        write_input(folder / "in2d.h5", p, image)
        automatic = kernels()
        paths = [automatic]
        baseline = kernels(dict(os.environ, SLICELAB_CRF_KERNELS="baseline"))
        if baseline != automatic:
            paths.append(baseline)
        ours_one, ours_all, runs, pinned = {p: [] for p in paths}, {p: [] for p in paths}, [], []
        warm = [peer(p, image) for _ in range(REPEATS)]
        for _ in range(REPEATS):
            pinned.append(peer_process(folder / "in2d.h5", folder / "peer.npy", pin=True))
            for path in paths:
                ours_one[path].append(slicelab(folder / "in2d.h5", folder / "out2d.h5", pin=True,
                                               baseline=path != automatic))
            runs.append(peer_process(folder / "in2d.h5", folder / "peer.npy", pin=False))
            for path in paths:
                ours_all[path].append(slicelab(folder / "in2d.h5", folder / f"out2d-{path}.h5", pin=False,
                                               baseline=path != automatic))
        theirs, theirs_cpu = min(r[0] for r in runs), min(r[1] for r in runs)
        theirs_one, theirs_one_cpu = min(r[0] for r in pinned), min(r[1] for r in pinned)
        print(f"2-D 512x512, 21 classes, 5 iterations [{isa}]:")
        print(f"  pydensecrf2 (single-threaded): pinned to core {CORE} {theirs_one:.3f} s wall, "
              f"{theirs_one_cpu:.3f} s CPU; unpinned {theirs:.3f} s wall, {theirs_cpu:.3f} s CPU (fresh process "
              f"each round; warm, in this process after a first run: {min(r[0] for r in warm[1:] or warm):.3f} s)")
        for path in paths:
            one, one_cpu = min(r[0] for r in ours_one[path]), min(r[1] for r in ours_one[path])
            both = min(r[0] for r in ours_all[path])
            rounds_one = [a[0] / b[0] for a, b in zip(ours_one[path], pinned)]
            rounds_all = [a[0] / b[0] for a, b in zip(ours_all[path], runs)]
            with h5py.File(folder / f"out2d-{path}.h5") as f:
                q = f["/marginals"][...]
            agree = float((q.argmax(0) == runs[0][2].argmax(0)).mean())
            print(f"  SliceLab [CRF kernels: {path}] 1 thread (pinned to core {CORE}): {one:.3f} s wall "
                  f"({one / theirs_one:.2f}x), {one_cpu:.3f} s CPU ({one_cpu / theirs_one_cpu:.2f}x); "
                  f"{os.cpu_count()} threads: {both:.3f} s wall ({both / theirs:.2f}x)")
            print(f"    per-round wall ratios, median [min-max]: 1 thread {np.median(rounds_one):.2f}x "
                  f"[{min(rounds_one):.2f}-{max(rounds_one):.2f}], {os.cpu_count()} threads "
                  f"{np.median(rounds_all):.2f}x [{min(rounds_all):.2f}-{max(rounds_all):.2f}]")
            print(f"    labels agree {100 * agree:.3f} %, max |dQ| {float(np.abs(q - runs[0][2]).max()):.2e}")

        print("load average after the 2-D case (1, 5, 15 min): "
              + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
        if os.environ.get("BENCH_CRF_3D", "1") == "0":  # BENCH_CRF_3D=0: the 2-D case only
            return
        shape3 = (200, 256, 256)
        p3 = probabilities(3, shape3)
        image3 = rng.integers(0, 256, size=shape3).astype(np.uint8)
        write_input(folder / "in3d.h5", p3, image3, spacing=[1.5, 0.8, 0.8])
        seconds, cpu_seconds, peak = slicelab(folder / "in3d.h5", folder / "out3d.h5", pin=False)
        print(f"3-D 200x256x256, 3 classes, 5 iterations [CRF kernels: {automatic}]: SliceLab {seconds:.1f} s wall "
              f"on {os.cpu_count()} cores ({cpu_seconds:.1f} s CPU), peak resident memory {peak:.0f} MB "
              f"(whole process) [{isa}]")
    print("load average at end (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--peer"]:  # the child of peer_process: time pydensecrf once, save its marginals
        with h5py.File(sys.argv[2]) as f:
            p, image = f["/probabilities"][...], f["/image"][0].astype(np.uint8)
        seconds, cpu, q = peer(p, image)
        np.save(sys.argv[3], q)
        print(seconds, cpu)
    else:
        main()
