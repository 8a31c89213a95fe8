"""Memory and time per slice of `slicelab segment` on NIfTI volumes (issue #18): the label volume streams.

Writes seeded int16 NIfTI volumes of --size x --size x N slices (nibabel; a smooth head-like pattern plus
noise, 1 x 1 x 3 mm) for each N in --counts, and a one-slice volume, then runs
`slicelab segment VOLUME --model MODEL --out OUT` (OUT in each of --formats) under `/usr/bin/time -v` and prints
wall time, time per slice and peak RSS ("Maximum resident set size"). A 3-D NIfTI input streams slice by slice
(the .nii.gz inflated as it is read) and an HDF5 output is written slice by slice, so into HDF5 the peak should
not grow with the slice count at all; a NIfTI output holds the label volume (4 bytes a voxel) until it is
written. There is no peer: this is a bound, not a race.

The model is the bundled MNI brain model by default (MobileNetV2, input scale 4: 256 x 256 slices run at
1024 x 1024 inside the network, so expect seconds per slice); --model takes any checkpoint.

    .venv/bin/python Benchmarks/bench_volume.py --slicelab .build/release/slicelab --counts 50,200
BENCH_QUICK=1 measures 4 and 16 slices of 128 x 128.
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
QUICK = os.environ.get("BENCH_QUICK") == "1"


def make_volume(path, size, slices, seed=18):
    """A seeded int16 volume [x, y, z] with 1 x 1 x 3 mm voxels: an ellipsoid 'head' of two intensities."""
    import nibabel as nib
    import numpy as np
    rng = np.random.default_rng(seed)
    x, y = np.meshgrid(np.linspace(-1, 1, size), np.linspace(-1, 1, size), indexing="ij")
    radius = np.sqrt(x ** 2 + (y * 1.2) ** 2)
    plane = np.where(radius < 0.8, 400, 0) + np.where(radius < 0.5, 300, 0)
    data = np.stack([plane + 20 * np.sin(k / 5.0) for k in range(slices)], axis=-1)
    data = (data + rng.normal(0, 15, data.shape)).astype(np.int16)
    image = nib.Nifti1Image(data, np.diag([1.0, 1.0, 3.0, 1.0]))
    image.set_qform(image.affine, code=1)
    image.set_sform(image.affine, code=1)
    nib.save(image, str(path))


def timed(command):
    """Wall seconds and peak RSS (MB) from `/usr/bin/time -v`."""
    result = subprocess.run(["/usr/bin/time", "-v"] + command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{command[0]} failed ({result.returncode}): {result.stderr[-2000:]}")
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr).group(1)) / 1024
    clock = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", result.stderr).group(1)
    seconds = 0.0
    for part in clock.split(":"):
        seconds = seconds * 60 + float(part)
    return seconds, peak


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", default="4,16" if QUICK else "50,200", help="slice counts, comma-separated")
    parser.add_argument("--size", type=int, default=128 if QUICK else 256, help="rows and columns of a slice")
    parser.add_argument("--formats", default="h5,nii.gz", help="output extensions, comma-separated")
    parser.add_argument("--model", default=str(ROOT / "Sources/SliceLabKit/Resources/Demo/models/mni-brain.h5"))
    parser.add_argument("--slicelab", default=str(ROOT / ".build/release/slicelab"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--work", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    arguments = parser.parse_args()
    counts = sorted(int(c) for c in arguments.counts.split(","))
    formats = arguments.formats.split(",")
    work = pathlib.Path(tempfile.mkdtemp(prefix="bench-volume-", dir=arguments.work))
    try:
        print(f"slicelab {arguments.slicelab}; model {arguments.model}; threads {arguments.threads}; "
              f"{arguments.size} x {arguments.size} slices {counts}; outputs {formats}")
        single = work / "single.nii.gz"
        make_volume(single, arguments.size, 1)
        seconds, peak = timed([arguments.slicelab, "segment", str(single), "--model", arguments.model,
                               "--out", str(work / "single.h5"), "--threads", str(arguments.threads)])
        print(f"     1 slice  -> .h5: {seconds:8.1f} s wall, peak RSS {peak:6.0f} MB", flush=True)
        for extension in formats:
            peaks = []
            for count in counts:
                volume = work / f"volume{count}.nii.gz"
                if not volume.exists():
                    make_volume(volume, arguments.size, count)
                out = work / f"labels.{extension}"
                seconds, peak = timed([arguments.slicelab, "segment", str(volume), "--model", arguments.model,
                                       "--out", str(out), "--threads", str(arguments.threads)])
                peaks.append(peak)
                image = count * arguments.size ** 2 * 4 / 1e6
                print(f"  {count:4d} slices -> .{extension}: {seconds:8.1f} s wall ({seconds / count:.3f} s/slice), "
                      f"peak RSS {peak:6.0f} MB (the Float32 input volume alone: {image:.0f} MB)", flush=True)
                out.unlink()
            growth = (peaks[-1] - peaks[0]) / max(counts[-1] - counts[0], 1)
            per_slice = arguments.size ** 2 * 4 / 1e6
            print(f"  .{extension}: peak RSS growth {growth:.2f} MB per slice from {counts[0]} to {counts[-1]} "
                  f"slices (one Float32 input slice is {per_slice:.2f} MB)", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
