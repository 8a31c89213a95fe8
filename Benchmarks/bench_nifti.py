"""NIfTI .nii.gz read: SliceLab against nibabel (`get_fdata`) and SimpleITK (`ReadImage`) in the same run.

The volume: 256 x 256 x 200 int16 (x, y, z), a smooth head-like phantom (ellipsoids of tissue intensities, a
slow bias field) plus Gaussian noise, seed 20261201, written by nibabel with gzip level 6 (its default), in
/dev/shm. Each reader's time (wall and CPU) is the read alone, in its own process: nibabel `nib.load(p).get_fdata()` (float64,
its default), SimpleITK `sitk.ReadImage(p)` (int16, its pixel type), SliceLab `slicelab info p --stats --json`'s
`read_seconds` (`NIfTIImage.read`: header checks, libdeflate, Float32 after scaling). Every reader runs `--rounds`
times (default 5), alternately; medians are compared. The issue's goals: nibabel / SliceLab >= 1.5, SimpleITK /
SliceLab >= 1.2. One thread each (SliceLab's read is single-threaded; SimpleITK is told to use one thread).

Run: make bench (release build), or .venv/bin/python Benchmarks/bench_nifti.py [--rounds R].
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile

import nibabel as nib
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
SEED = 20261201

PEERS = {
    "nibabel": "import sys, time, nibabel as nib\nt, c = time.perf_counter(), time.process_time()\n"
               "a = nib.load(sys.argv[1]).get_fdata()\nprint(time.perf_counter() - t, time.process_time() - c)",
    "SimpleITK": "import sys, time, SimpleITK as sitk\nsitk.ProcessObject.SetGlobalDefaultNumberOfThreads(1)\n"
                 "t, c = time.perf_counter(), time.process_time()\nimage = sitk.ReadImage(sys.argv[1])\n"
                 "print(time.perf_counter() - t, time.process_time() - c)",
}


def phantom(shape=(256, 256, 200)):
    rng = np.random.default_rng(SEED)
    x, y, z = np.meshgrid(*[np.linspace(-1, 1, n, dtype=np.float32) for n in shape], indexing="ij")
    volume = np.zeros(shape, np.float32)
    for (cx, cy, cz, rx, ry, rz, value) in [(0, 0, 0, .85, .9, .8, 300), (0, 0, 0, .75, .8, .7, 900),
                                            (0, .05, 0, .55, .6, .5, 1200), (.2, -.1, .1, .12, .15, .1, 1600)]:
        inside = ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 + ((z - cz) / rz) ** 2 <= 1
        volume[inside] = value
    volume *= 1 + 0.15 * x * y  # a slow bias field
    volume += rng.normal(0, 20, shape).astype(np.float32)
    return np.clip(volume, -32768, 32767).astype(np.int16)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--binary", default=str(ROOT / ".build" / "release" / "slicelab"))
    args = parser.parse_args()
    isa = subprocess.run([args.binary, "--version"], capture_output=True, text=True).stdout
    isa = next((line.split(": ", 1)[1] for line in isa.splitlines() if line.startswith("oneDNN ISA")), "?")
    folder = pathlib.Path(tempfile.mkdtemp(dir="/dev/shm" if pathlib.Path("/dev/shm").exists() else None))
    path = folder / "volume.nii.gz"
    nib.save(nib.Nifti1Image(phantom(), np.diag([0.9, 0.9, 1.2, 1])), path)
    print(f"volume 256 x 256 x 200 int16, {path.stat().st_size / 1e6:.1f} MB gzip "
          f"({256 * 256 * 200 * 2 / 1e6:.1f} MB raw); CPU ISA (oneDNN): {isa}", flush=True)
    times = {name: {"wall": [], "CPU": []} for name in ("SliceLab", "nibabel", "SimpleITK")}
    for _ in range(args.rounds):
        result = subprocess.run([args.binary, "info", str(path), "--stats", "--json"], capture_output=True,
                                text=True, check=True)
        read = json.loads(result.stdout)["statistics"]
        times["SliceLab"]["wall"].append(read["read_seconds"])
        times["SliceLab"]["CPU"].append(read["read_cpu_seconds"])
        for name, code in PEERS.items():
            result = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                                    check=True)
            wall, cpu = map(float, result.stdout.split())
            times[name]["wall"].append(wall)
            times[name]["CPU"].append(cpu)
    for kind in ("wall", "CPU"):  # CPU time (user + system) is what a loaded machine disturbs least
        medians = {name: statistics.median(values[kind]) for name, values in times.items()}
        for name, median in medians.items():
            rounds = ", ".join(f"{t:.3f}" for t in times[name][kind])
            print(f"{kind:4s} {name:10s} median {median:.3f} s  (rounds: {rounds})")
        print(f"{kind:4s} nibabel / SliceLab = {medians['nibabel'] / medians['SliceLab']:.2f} (goal >= 1.5); "
              f"SimpleITK / SliceLab = {medians['SimpleITK'] / medians['SliceLab']:.2f} (goal >= 1.2)")
    path.unlink()
    folder.rmdir()


if __name__ == "__main__":
    main()
