"""Memory of `slicelab segment` on a long CT series: it must stream slice by slice (issue #10).

Generates a 512 x 512 CT series of --slices slices (pydicom, seeded, the same generator as bench_dicom.py), makes
an untrained DeepLabV3-ResNet-50 checkpoint for 21 classes and gray input (`slicelab train`, one step on a tiny
generated set), then runs `slicelab segment SERIES --model MODEL --out OUT.h5` for each slice count in --counts
and prints wall time and peak RSS (the child's maximum resident set, wait4). Streaming means the peak does not
grow with the number of slices; the target is < 2 GB for 300 slices. There is no peer: this is a bound, not a
race. --probabilities adds /probabilities (21 x 512 x 512 Float32 per slice) to the output.

Run after `swift build -c release` (or pass --slicelab .build/debug/slicelab):
    .venv/bin/python Benchmarks/bench_memory.py --counts 8,32,300
BENCH_QUICK=1 measures 4 and 12 slices only.
"""
import argparse
import json
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_dicom import make_series, run  # noqa: E402  (the seeded CT series and the wait4 runner)

QUICK = os.environ.get("BENCH_QUICK") == "1"


def png(path, rows, bits):
    """A gray PNG of `rows` (lists of ints) at `bits` (8 or 16) bits, written without a dependency."""
    height, width = len(rows), len(rows[0])
    fmt = ">%dH" % width if bits == 16 else "%dB" % width
    raw = b"".join(b"\x00" + struct.pack(fmt, *row) for row in rows)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, bits, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
                     + chunk(b"IEND", b""))


def make_model(slicelab, folder, threads):
    """One training step of DeepLabV3-ResNet-50 (21 classes, 1 channel) on two 32 x 32 cases: a real checkpoint
    with untrained-like weights."""
    data = folder / "set"
    for sub in ("images", "labels"):
        (data / sub).mkdir(parents=True)
    for k in range(2):
        labels = [[(1 if 8 <= y < 20 and 8 <= x < 20 else 0) + (2 if y >= 24 else 0) for x in range(32)]
                  for y in range(32)]
        png(data / "images" / f"c{k}.png", [[100 + 500 * v + (x * y + k) % 7 for x, v in enumerate(r)]
                                           for y, r in enumerate(labels)], 16)
        png(data / "labels" / f"c{k}.png", labels, 8)
    classes = ["background"] + [f"class_{i}" for i in range(1, 21)]
    (data / "dataset.json").write_text(json.dumps({"name": "bench", "classes": classes, "modality": "CT",
                                                   "splits": {"train": ["c0", "c1"]}}))
    model = folder / "resnet50.h5"
    seconds, peak, _, _ = run([slicelab, "train", str(data), "--arch", "deeplabv3_resnet50", "--num-classes", "21",
                               "--decoder", "v3", "--steps", "1", "--batch", "1", "--crop", "32", "--threads", str(threads),
                               "--out", str(model)])
    print(f"model: deeplabv3_resnet50, 21 classes, 1 channel, one training step ({seconds:.1f} s, peak "
          f"{peak:.0f} MB), {model.stat().st_size / 1e6:.0f} MB checkpoint")
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", default="4,12" if QUICK else "8,32,300",
                        help="slice counts to segment, comma-separated (the series has the largest)")
    parser.add_argument("--slicelab", default=str(ROOT / ".build/release/slicelab"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--probabilities", action="store_true", help="also write /probabilities")
    parser.add_argument("--work", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    arguments = parser.parse_args()
    counts = sorted(int(c) for c in arguments.counts.split(","))
    work = pathlib.Path(tempfile.mkdtemp(prefix="bench-memory-", dir=arguments.work))
    try:
        print(f"slicelab {arguments.slicelab}; threads {arguments.threads}; slices {counts}; "
              f"probabilities {arguments.probabilities}")
        model = make_model(arguments.slicelab, work, arguments.threads)
        peaks = []
        for count in counts:
            series = work / f"series{count}"
            series.mkdir()
            make_series(series, count)
            out = work / "labels.h5"
            command = [arguments.slicelab, "segment", str(series), "--model", str(model), "--out", str(out),
                       "--threads", str(arguments.threads)] + (["--probabilities"] if arguments.probabilities else [])
            seconds, peak, _, cpu = run(command)
            peaks.append(peak)
            volume = count * 512 * 512 * 4 / 1e6
            print(f"  {count:4d} slices: {seconds:8.1f} s wall ({seconds / count:.2f} s/slice, {cpu:.1f} s CPU), "
                  f"peak RSS {peak:6.0f} MB (the Float32 volume alone: {volume:.0f} MB), "
                  f"output {out.stat().st_size / 1e6:.1f} MB", flush=True)
            shutil.rmtree(series)
            out.unlink()
        growth = (peaks[-1] - peaks[0]) / max(counts[-1] - counts[0], 1)
        print(f"peak RSS growth: {growth:.2f} MB per slice from {counts[0]} to {counts[-1]} slices "
              f"(a whole-volume reader would add >= 1.05 MB per slice for the image alone); "
              f"largest peak {max(peaks):.0f} MB, target < 2048 MB: {'met' if max(peaks) < 2048 else 'MISSED'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
