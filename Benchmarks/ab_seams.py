"""A/B benchmark of two SliceLab revisions (issue #17, "seams"): is the head slower than the base?

Both release binaries run the same four workloads as `slicelab` processes (the CLI contract is the
same in both), all with 2 threads (--threads 2, OMP_NUM_THREADS=2):
  resnet50-inference  `slicelab segment` of DeepLabV3-ResNet-50 (21 classes) on one 3x512x512 image;
      the median of its 5 warm forwards (SLICELAB_PARITY_REPEAT, the `latencies_ms` line). The weights
      have torchvision's state_dict keys and shapes, He-normal random values (seeded), and are written
      as safetensors with numpy: no torch needed.
  resnet18-train  `slicelab train --arch deeplabv3_resnet18` on a synthetic labeled set (HDF5 images
      and label maps), 11 steps of batch 4 x 128x128 crops, no validation; the step time is 1 / the
      steps/s of its last progress line, which counts from the end of step 1 (the mean of steps 2..11).
  dicom-decode  `slicelab convert` of the 155 decodable files of the DICOM conformance corpus
      (`make corpus`) copied flat into one folder, each file that `convert` skips for its series' size
      moved to a folder of its own (as Benchmarks/bench_dicom.py does); the total wall time.
  kmeans  `slicelab cluster --method kmeans --classes 4 --space rgb --n-init 1` of a 512x512 RGB PNG;
      the median "cluster" stage (SLICELAB_TIMINGS) of 15 processes (one takes ~50 ms).
  compare-demo  `slicelab compare` of the bundled mni-brain set with its model and k-means (map=train-vote);
      the total wall time of the process.
Inputs are generated with fixed seeds under the work folder (--work, default /tmp/ab).

Interleaving: each round runs every workload on both binaries back to back, base first in odd rounds
and head first in even ones, so load from other users of the machine falls on both alike. Per
workload the table gives the medians of the base's and the head's rounds, the median of the per-round
ratios head/base and their range. The noise is half the relative range of the base's own rounds, at
least 3%; "no slowdown beyond noise" when the median ratio is at most 1 + noise (no verdict with fewer
than 3 rounds, which give no estimate of the noise).

Run (about 8 minutes with 5 rounds on 2 cores, plus the builds):
    .venv/bin/python Benchmarks/ab_seams.py [--base e9a3897] [--head REV] [--rounds 5] [--only kmeans]
The base (a git revision) is built in a worktree at /tmp/ab/<rev>; the head defaults to this
repository's working tree, built in place. --base-binary / --head-binary take prebuilt binaries.
"""
import argparse
import json
import os
import pathlib
import shlex
import shutil
import struct
import subprocess
import sys
import time

from corpus_folders import separate_skipped
import zlib

import h5py
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
CORPUS = ROOT / "Datasets" / "cache" / "dicom-corpus"
GOLDENS = ROOT / "Tests" / "DICOMTests" / "Fixtures" / "dicom_goldens.json"
THREADS = 2
SEED = 20261201
NOISE_FLOOR = 0.03
MIN_ROUNDS = 3
INFERENCE_REPEATS = 5
TRAIN_STEPS = 11
KMEANS_RUNS = 15


# --- binaries --------------------------------------------------------------------------------

def build(folder):
    """`swift build -c release --product slicelab` in `folder`; returns the binary's path."""
    command = ["swift", "build", "-c", "release", "--product", "slicelab"]
    print(f"building in {folder}: {shlex.join(command)}", flush=True)
    built = subprocess.run(command, cwd=folder, capture_output=True, text=True)
    if built.returncode != 0:
        sys.exit(f"the build in {folder} failed:\n{built.stdout[-3000:]}{built.stderr[-3000:]}")
    shown = subprocess.run(command + ["--show-bin-path"], cwd=folder, check=True, capture_output=True,
                           text=True)
    return pathlib.Path(shown.stdout.strip()) / "slicelab"


def binary_for(revision, prebuilt, work):
    """A prebuilt binary, else a release build of `revision` in a worktree under `work`, else of the
    working tree."""
    if prebuilt:
        return pathlib.Path(prebuilt)
    if revision is None:
        return build(ROOT)
    tree = work / revision
    if not tree.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), revision],
                       check=True)
    return build(tree)


def version_lines(binary):
    done = subprocess.run([str(binary), "--version"], check=True, capture_output=True, text=True)
    return done.stdout.splitlines()


def cpu_model():
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def isa(versions):
    """oneDNN's ISA as a binary reports it, else the best one /proc/cpuinfo's flags allow."""
    for lines in versions:
        for line in lines:
            if line.startswith("oneDNN ISA:"):
                return line.split(":", 1)[1].strip()
    flags = set(next(l for l in pathlib.Path("/proc/cpuinfo").read_text().splitlines()
                     if l.startswith("flags")).split(":", 1)[1].split())
    for name, needed in (("avx512_core_amx", {"amx_tile", "avx512f"}), ("avx512_core_vnni", {"avx512_vnni"}),
                         ("avx512_core", {"avx512f", "avx512bw", "avx512vl"}), ("avx2", {"avx2"})):
        if needed <= flags:
            return f"{name} (from /proc/cpuinfo flags)"
    return "sse41 (from /proc/cpuinfo flags)"


# --- inputs ----------------------------------------------------------------------------------

def resnet50_deeplab_keys(classes):
    """(key, shape) of torchvision's deeplabv3_resnet50 state_dict without the auxiliary head."""
    keys = []

    def conv(name, out_channels, in_channels, k):
        keys.append((f"{name}.weight", [out_channels, in_channels, k, k]))

    def norm(name, channels):
        fields = ("weight", "bias", "running_mean", "running_var")
        keys.extend((f"{name}.{field}", [channels]) for field in fields)
        keys.append((f"{name}.num_batches_tracked", []))

    conv("backbone.conv1", 64, 3, 7)
    norm("backbone.bn1", 64)
    channels = 64
    for layer, (planes, blocks) in enumerate([(64, 3), (128, 4), (256, 6), (512, 3)], start=1):
        for block in range(blocks):
            p = f"backbone.layer{layer}.{block}"
            conv(f"{p}.conv1", planes, channels, 1)
            norm(f"{p}.bn1", planes)
            conv(f"{p}.conv2", planes, planes, 3)
            norm(f"{p}.bn2", planes)
            conv(f"{p}.conv3", planes * 4, planes, 1)
            norm(f"{p}.bn3", planes * 4)
            if block == 0:
                conv(f"{p}.downsample.0", planes * 4, channels, 1)
                norm(f"{p}.downsample.1", planes * 4)
            channels = planes * 4
    for branch, k in enumerate([1, 3, 3, 3]):
        conv(f"classifier.0.convs.{branch}.0", 256, channels, k)
        norm(f"classifier.0.convs.{branch}.1", 256)
    conv("classifier.0.convs.4.1", 256, channels, 1)
    norm("classifier.0.convs.4.2", 256)
    conv("classifier.0.project.0", 256, 5 * 256, 1)
    norm("classifier.0.project.1", 256)
    conv("classifier.1", 256, 256, 3)
    norm("classifier.2", 256)
    conv("classifier.4", classes, 256, 1)
    keys.append(("classifier.4.bias", [classes]))
    return keys


def initial_value(rng, key, shape):
    """He-normal convolutions (activations stay O(1), clear of denormals), batch norm as freshly built."""
    if key.endswith("num_batches_tracked"):
        return np.zeros(shape, np.int64)
    if len(shape) == 4:
        return (rng.standard_normal(shape) * np.sqrt(2 / np.prod(shape[1:]))).astype(np.float32)
    fill = 1.0 if key.endswith(("running_var", ".weight")) else 0.0
    return np.full(shape, fill, np.float32)


def write_safetensors(path, tensors):
    """Hugging Face's format: 8-byte little-endian header length, JSON header, then the raw tensors."""
    header, offset = {}, 0
    for name, array in tensors:
        dtype = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}[array.dtype]
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as file:
        file.write(struct.pack("<Q", len(text)) + text)
        for _, array in tensors:
            file.write(np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes())


def write_png(path, rgb):
    """An 8-bit RGB PNG (filter 0 on every row)."""
    rows, columns, _ = rgb.shape

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + row.tobytes() for row in rgb.astype(np.uint8))
    header = struct.pack(">IIBBBBB", columns, rows, 8, 2, 0, 0, 0)  # 8 bits, RGB
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 6))
                     + chunk(b"IEND", b""))


def prepare_inference(folder):
    """Random DeepLabV3-ResNet-50 weights (160 MB, kept for later runs) and one 3x512x512 image."""
    weights = folder / "deeplabv3_resnet50.safetensors"
    if not weights.exists():
        rng = np.random.default_rng([SEED, 0])
        partial = weights.with_suffix(".partial")
        write_safetensors(partial, [(k, initial_value(rng, k, s)) for k, s in resnet50_deeplab_keys(21)])
        partial.rename(weights)
    with h5py.File(folder / "image.h5", "w") as file:
        file["image"] = np.random.default_rng([SEED, 1]).random((1, 3, 512, 512), dtype=np.float32)


def prepare_training(folder, rng):
    """A labeled set of 8 gray 160x160 cases with 4 classes, in HDF5 (as Benchmarks/bench_training.py)."""
    for sub in ("images", "labels"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    names = [f"c{i}" for i in range(8)]
    for name in names:
        with h5py.File(folder / "images" / f"{name}.h5", "w") as file:
            file["image"] = rng.random((160, 160), dtype=np.float32)
        with h5py.File(folder / "labels" / f"{name}.h5", "w") as file:
            file["labels"] = rng.integers(0, 4, (160, 160), dtype=np.uint8)
    (folder / "dataset.json").write_text(json.dumps({
        "name": "ab-seams", "classes": ["a", "b", "c", "d"], "modality": "OT", "splits": {"train": names},
        "preprocessing": {"normalize": "none"}}))


def prepare_corpus(folder, binary):
    """The corpus's decodable files flat in `folder`, each that `convert` skips moved to a folder of its own;
    returns the folders."""
    if not CORPUS.is_dir():
        sys.exit(f"the DICOM corpus is missing ({CORPUS}): run `make corpus`")
    folder.mkdir()
    goldens = json.loads(GOLDENS.read_text())
    for index, entry in enumerate(f for f in goldens["files"] if f["status"] == "ok"):
        source = CORPUS / entry["file"]
        shutil.copy(source, folder / f"{index:03d}_{source.name}")
    probe = run([binary, "convert", str(folder), str(folder.parent / "probe.h5")])
    return separate_skipped(folder, probe.stdout)


def prepare_kmeans(folder, rng):
    """Four colored regions plus noise, as Benchmarks/bench_classical.py draws them."""
    yy, xx = np.mgrid[0:512, 0:512]
    rgb = np.zeros((512, 512, 3))
    rgb[:] = (200, 60, 50)
    rgb[yy + xx > 500] = (40, 170, 70)
    rgb[(yy - 256) ** 2 + (xx - 256) ** 2 < 120 ** 2] = (40, 50, 210)
    rgb[(yy < 150) & (xx > 350)] = (230, 230, 210)
    write_png(folder / "rgb.png", np.clip(rgb + rng.normal(0, 25, rgb.shape), 0, 255))


# --- workloads: each returns one measurement in seconds --------------------------------------

def run(command, environment=None):
    """The finished process (text output) of `command` with 2 OpenMP threads; exits on failure."""
    result = subprocess.run([str(part) for part in command], capture_output=True, text=True,
                            env={**os.environ, "OMP_NUM_THREADS": str(THREADS), **(environment or {})})
    if result.returncode != 0:
        sys.exit(f"{shlex.join(map(str, command))} failed ({result.returncode}): {result.stderr[-2000:]}")
    return result


def resnet50_inference(binary, work, _):
    result = run([binary, "segment", "--weights", work / "deeplabv3_resnet50.safetensors",
                  "--arch", "deeplabv3_resnet50", "--num-classes", "21", "--in-channels", "3",
                  "--raw-input", work / "image.h5", "--logits", work / "logits.h5", "--threads", THREADS],
                 {"SLICELAB_PARITY_REPEAT": str(INFERENCE_REPEATS)})
    line = next(l for l in result.stderr.splitlines() if l.startswith("latencies_ms"))
    return median([float(v) for v in line.split()[1:]]) / 1000


def resnet18_train(binary, work, _):
    result = run([binary, "train", work / "set", "--arch", "deeplabv3_resnet18", "--num-classes", "4",
                  "--in-channels", "1", "--decoder", "v3", "--steps", TRAIN_STEPS, "--batch", "4", "--crop", "128",
                  "--val-every", TRAIN_STEPS + 1, "--threads", THREADS, "--out", work / "model.h5"])
    line = [l for l in result.stderr.splitlines() if "steps/s" in l][-1]
    return 1 / float(line.split("steps/s")[0].split()[-1])


def dicom_decode(binary, work, corpus_folders):
    start = time.perf_counter()
    for folder in corpus_folders:
        run([binary, "convert", folder, work / "corpus.h5"])
    return time.perf_counter() - start


def kmeans(binary, work, _):
    stages = []
    for _ in range(KMEANS_RUNS):
        result = run([binary, "cluster", work / "rgb.png", "--method", "kmeans", "--classes", "4",
                      "--space", "rgb", "--n-init", "1", "--seed", "0", "--out", work / "kmeans.h5"],
                     {"SLICELAB_TIMINGS": "1"})
        stages += [float(l.split()[2]) for l in result.stderr.splitlines() if l.startswith("timing cluster ")]
    return median(stages)


def compare_demo(binary, work, _):
    """`compare` of the bundled mni-brain set (this tree's copy, for both binaries) with its model and k-means."""
    demo = ROOT / "Sources" / "SliceLabKit" / "Resources" / "Demo"
    start = time.perf_counter()
    run([binary, "compare", demo / "mni-brain", "--model", demo / "models" / "mni-brain.h5",
         "--classical", "kmeans:space=gray,map=train-vote", "--out", work / "compare.h5", "--overwrite",
         "--threads", str(THREADS)])
    return time.perf_counter() - start


WORKLOADS = {
    "resnet50-inference": ("DeepLabV3-ResNet-50 inference 3x512x512, median forward", resnet50_inference),
    "resnet18-train": ("DeepLabV3-ResNet-18 training step, batch 4 x 128x128", resnet18_train),
    "dicom-decode": ("DICOM corpus decode (`convert`), total wall", dicom_decode),
    "kmeans": ("k-means K=4 512x512 RGB, cluster stage", kmeans),
    "compare-demo": ("`compare` on the bundled mni-brain set (DeepLabV3 + k-means), total wall", compare_demo),
}


# --- measurement and report ------------------------------------------------------------------

def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def measure(names, binaries, work, corpus_folders, rounds):
    """{workload: {"base": [seconds per round], "head": [...]}}, base and head back to back in every round."""
    times = {name: {"base": [], "head": []} for name in names}
    for index in range(rounds):
        order = ("base", "head") if index % 2 == 0 else ("head", "base")
        for name in names:
            for side in order:
                times[name][side].append(WORKLOADS[name][1](binaries[side], work, corpus_folders))
            print(f"round {index + 1}/{rounds} {name}: base {times[name]['base'][-1]:.4f} s, "
                  f"head {times[name]['head'][-1]:.4f} s (load average {os.getloadavg()[0]:.1f})", flush=True)
    return times


def seconds(value):
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.3f} s"


def table(times):
    lines = ["| workload | base | head | head/base | per-round ratio range | verdict |",
             "|---|---|---|---|---|---|"]
    for name, sides in times.items():
        base, head = sides["base"], sides["head"]
        ratios = [h / b for b, h in zip(base, head)]
        ratio = median(ratios)
        noise = max(NOISE_FLOOR, (max(base) - min(base)) / median(base) / 2)
        if len(base) < MIN_ROUNDS:
            verdict = f"no verdict: fewer than {MIN_ROUNDS} rounds give no noise estimate"
        elif ratio <= 1 + noise:
            verdict = f"no slowdown beyond noise (±{noise * 100:.1f}%)"
        else:
            verdict = f"slower beyond noise (±{noise * 100:.1f}%)"
        lines.append(f"| {WORKLOADS[name][0]} | {seconds(median(base))} | {seconds(median(head))} | "
                     f"{ratio:.3f} | {min(ratios):.3f}–{max(ratios):.3f} | {verdict} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default="e9a3897", help="git revision of the base (default e9a3897)")
    parser.add_argument("--head", default=None, help="git revision of the head (default: the working tree)")
    parser.add_argument("--base-binary", help="a prebuilt base slicelab (no build)")
    parser.add_argument("--head-binary", help="a prebuilt head slicelab (no build)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", choices=list(WORKLOADS), action="append", help="a workload (repeatable)")
    parser.add_argument("--work", default="/tmp/ab", help="worktrees and inputs (default /tmp/ab)")
    arguments = parser.parse_args()
    work = pathlib.Path(arguments.work)
    work.mkdir(parents=True, exist_ok=True)
    binaries = {"base": binary_for(arguments.base, arguments.base_binary, work),
                "head": binary_for(arguments.head, arguments.head_binary, work)}
    versions = {side: version_lines(binary) for side, binary in binaries.items()}
    for side, binary in binaries.items():
        label = arguments.base if side == "base" else arguments.head or "working tree"
        print(f"{side} ({label}): {binary}\n  " + "\n  ".join(versions[side]))
    names = arguments.only or list(WORKLOADS)

    inputs = work / "inputs"
    inputs.mkdir(exist_ok=True)
    prepare_inference(inputs)
    prepare_training(inputs / "set", np.random.default_rng([SEED, 2]))
    prepare_kmeans(inputs, np.random.default_rng([SEED, 3]))
    corpus_folders = []
    if "dicom-decode" in names:
        shutil.rmtree(inputs / "dicom", ignore_errors=True)
        (inputs / "dicom").mkdir()
        corpus_folders = prepare_corpus(inputs / "dicom" / "corpus", binaries["base"])
    times = measure(names, binaries, inputs, corpus_folders, arguments.rounds)
    print(f"\nCPU: {cpu_model()}; oneDNN ISA: {isa([versions['head'], versions['base']])}; "
          f"{THREADS} threads; {arguments.rounds} interleaved round(s); "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"Command: {shlex.join([sys.executable, *sys.argv])}\n")
    print(table(times))


if __name__ == "__main__":
    main()
