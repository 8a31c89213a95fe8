"""Scale-out benchmark (issue #20): data-parallel `slicelab train` under Open MPI on this machine.

For each backbone (DeepLabV3-MobileNetV2 and DeepLabV3-ResNet-50, 3 classes, global batch BATCH x 1 x CROP^2):
1. `mpirun -np 2 ... slicelab train --threads 1`, once over TCP on the loopback interface (as between nodes) and
   once over shared memory (Open MPI's own choice on one node): rank 0's summary line gives the bytes all-reduced
   per step, the all-reduce time per step (packing each bucket's gradients, the blocking MPI_Allreduce as
   backward hands the bucket over, copying back) and its share of the step.
2. The same global batch on 1 rank x 2 threads against 2 ranks x 1 thread: mean step time (the progress line's
   steps/s) of each, alternated REPEATS times, medians compared. The goal is <= 10 % overhead.
The peer here is SliceLab itself in one process (the equivalence test checks the arithmetic). Needs the release
build (`make bench` builds it), mpirun (openmpi-bin) and numpy. BENCH_QUICK=1 for fewer steps and one repeat.
Prints one JSON line per backbone, with the oneDNN ISA it ran at.
"""
import json
import os
import pathlib
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import zlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
QUICK = os.environ.get("BENCH_QUICK") == "1"
STEPS = 6 if QUICK else 12
REPEATS = 1 if QUICK else 3
BATCH, CROP = 4, int(os.environ.get("BENCH_MPI_CROP", "128"))
ISA = "unknown"
ARCHS = os.environ.get("BENCH_MPI_ARCHS", "deeplabv3_mobilenet_v2,deeplabv3_resnet50").split(",")

try:
    import numpy as np
except ImportError as error:
    print(f"bench_mpi: skipped, numpy missing ({error})")
    sys.exit(0)


def png(path, pixels):
    """An 8-bit grayscale PNG of a 2-D uint8 array."""
    rows = b"".join(b"\x00" + row.tobytes() for row in pixels)
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    header = struct.pack(">IIBBBBB", pixels.shape[1], pixels.shape[0], 8, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
                     + chunk(b"IEND", b""))


def toy_set(folder, cases=9, size=160, seed=0):
    """Discs (1) and squares (2) on a noisy background, as the README's toy set."""
    random = np.random.default_rng(seed)
    (folder / "images").mkdir(parents=True)
    (folder / "labels").mkdir()
    names = []
    for index in range(cases):
        labels = np.zeros((size, size), np.uint8)
        y, x = np.mgrid[0:size, 0:size] + 0.5
        for shape in range(3):
            radius = size * random.uniform(0.08, 0.18)
            cy, cx = random.uniform(radius, size - radius, 2)
            inside = (np.maximum(abs(y - cy), abs(x - cx)) <= radius) if shape % 2 else \
                ((y - cy) ** 2 + (x - cx) ** 2 <= radius ** 2)
            labels[inside] = 2 if shape % 2 else 1
        image = np.clip(np.array([50, 130, 210])[labels] + 12 * random.standard_normal(labels.shape), 0, 255)
        name = f"case{index:03d}"
        names.append(name)
        png(folder / "images" / f"{name}.png", image.round().astype(np.uint8))
        png(folder / "labels" / f"{name}.png", labels)
    (folder / "dataset.json").write_text(json.dumps({
        "name": "bench-mpi", "classes": ["background", "disc", "square"], "modality": "OT",
        "splits": {"train": names[1:], "val": names[:1]},
        "preprocessing": {"normalize": "window", "center": 127.5, "width": 255}}))


TRANSPORTS = {
    # TCP over the loopback interface, as between nodes (and as the tests pin it).
    "tcp-loopback": ["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"],
    # Shared memory, what Open MPI picks by itself for ranks on one node.
    "shared-memory": ["--mca", "btl", "self,vader"],
}


def mpirun(transport):
    command = ["mpirun", "-np", "2", "--oversubscribe", "--bind-to", "core", "--map-by", "core",
               "--mca", "oob_tcp_if_include", "lo"] + TRANSPORTS[transport]
    return command + (["--allow-run-as-root"] if os.getuid() == 0 else [])


def train(binary, folder, arch, threads, ranks, transport="tcp-loopback"):
    out = folder / f"m-{arch}-{ranks}.h5"
    arguments = [str(binary), "train", str(folder), "--arch", arch, "--num-classes", "3", "--decoder", "v3", "--steps", str(STEPS),
                 "--batch", str(BATCH), "--crop", str(CROP), "--val-every", str(STEPS + 1), "--seed", "0",
                 "--threads", str(threads), "--out", str(out)]
    command = (mpirun(transport) if ranks > 1 else []) + arguments
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"bench_mpi: {' '.join(command)} failed:\n{run.stderr}")
    rates = [line for line in run.stderr.splitlines() if "steps/s" in line]
    step = 1 / float(rates[-1].split("steps/s")[0].split()[-1])
    summary = next((line for line in run.stderr.splitlines() if line.startswith("data-parallel:")), None)
    return step, summary


def cost_model(megabytes, compute_seconds):
    """Ring all-reduce of `megabytes` per step (2(N-1)/N of it sent and received per rank, no overlap, latency
    ignored) at 10/25/100 Gb/s for 8..256 ranks, and the weak-scaling efficiency compute / (compute + all-reduce)
    it predicts for `compute_seconds` per step."""
    rows = []
    for ranks in (8, 32, 64, 256):
        for gbits in (10, 25, 100):
            seconds = 2 * (ranks - 1) / ranks * megabytes * 8e6 / (gbits * 1e9)
            rows.append({"ranks": ranks, "gbit_s": gbits, "allreduce_s": round(seconds, 4),
                         "efficiency": round(compute_seconds / (compute_seconds + seconds), 3)})
    return rows


def main():
    binary = pathlib.Path(os.environ.get("BENCH_SLICELAB_BINARY", ROOT / ".build/release/slicelab"))
    if not binary.exists() or shutil.which("mpirun") is None:
        print("bench_mpi: skipped, needs .build/release/slicelab (make release) and mpirun (openmpi-bin)")
        return 0
    global ISA
    ISA = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout.split(
        "oneDNN ISA: ")[-1].split()[0]
    folder = pathlib.Path(tempfile.mkdtemp(prefix="bench-mpi-"))
    try:
        toy_set(folder)
        for arch in ARCHS:
            one, two, summaries = [], {name: [] for name in TRANSPORTS}, {}
            for _ in range(REPEATS):
                one.append(train(binary, folder, arch, threads=2, ranks=1)[0])
                for transport in TRANSPORTS:
                    step, summaries[transport] = train(binary, folder, arch, threads=1, ranks=2, transport=transport)
                    two[transport].append(step)
            result = {"arch": arch, "isa": ISA, "global_batch": [BATCH, 1, CROP, CROP], "steps": STEPS,
                      "repeats": REPEATS, "one_rank_two_threads_s": statistics.median(one)}
            for transport in TRANSPORTS:
                result[transport] = {"two_ranks_one_thread_s": statistics.median(two[transport]),
                                     "overhead": statistics.median(two[transport]) / statistics.median(one) - 1,
                                     "summary_last_run": summaries[transport]}
            megabytes = float(summaries["tcp-loopback"].split(",")[1].split()[0])
            result["cost_model"] = cost_model(megabytes, statistics.median(one))
            print(json.dumps(result), flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
