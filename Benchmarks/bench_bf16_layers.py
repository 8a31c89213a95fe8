"""bf16 against fp32 per kind of convolution (issue #40): which layers oneDNN 2.6's bf16 kernels make faster on this
CPU, the measurement behind `Bf16Support`'s choice (bf16 on AVX512_CORE_BF16 and AMX) and behind the units
`DeepLabV3.useBf16` leaves in f32.

For each model, `segment --raw-input --timings` runs it in fp32 and in bf16 (fresh processes, alternated over
BENCH_ROUNDS rounds, default 3; SLICELAB_PARITY_REPEAT=5 warm repeats each) and prints its roofline rows; each
convolution's time is taken from them (median over rounds) and grouped by kind (pointwise 1 x 1, depthwise, dense
k x k, strided, dilated), read from the model's ONNX export. A kind's ratio is its bf16 time over its fp32 time.
BENCH_ISA caps oneDNN (`ONEDNN_MAX_CPU_ISA`, e.g. AVX512_CORE_BF16 on an AMX machine, to measure the kernels a CPU
with bf16 instructions but no AMX runs; the figures are then of this CPU's cores running those kernels).

Models: the bundled `mni-brain` model (1 x 233 x 197, one bundled slice) and DeepLabV3-ResNet-50 at 512 x 512 (made by
`slicelab train`, 2 steps; only its speed means something), as bench_deeplab_int8.py makes them.

Run: `BENCH_ISA=AVX512_CORE_BF16 .venv/bin/python Benchmarks/bench_bf16_layers.py` after `swift build -c release`.
"""
import collections
import os
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_deeplab_int8 import make_resnet50, median  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]


def kinds(onnx_path):
    """Each Conv node's name (the unit's) and kind: depthwise, pointwise (1 x 1), dilated, strided or dense."""
    import onnx
    from onnx import helper
    model = onnx.load(onnx_path)
    weights = {t.name: list(t.dims) for t in model.graph.initializer}
    result = {}
    for node in model.graph.node:
        if node.op_type != "Conv":
            continue
        a = {attribute.name: helper.get_attribute_value(attribute) for attribute in node.attribute}
        w = weights[node.input[1]]
        group, kernel = a.get("group", 1), w[2]
        if group > 1 and w[1] == 1:
            kind = "depthwise"
        elif kernel == 1:
            kind = "pointwise"
        elif a.get("dilations", [1, 1])[0] > 1:
            kind = "dilated"
        else:
            kind = "strided" if a.get("strides", [1, 1])[0] > 1 else "dense"
        result[node.name] = kind
    return result


def profile(binary, model, raw_input, threads, precision, isa):
    """{layer: (ms, strategy)} and the median forward latency of one process."""
    # Without AMX `--precision bf16` is refused (measured slower); the variable runs oneDNN's kernels to measure them.
    # fp32 runs unit by unit as bf16 does (no fused blocks, no own depthwise kernel), so each layer is compared with
    # itself.
    env = dict(os.environ, SLICELAB_PARITY_REPEAT="5", OMP_NUM_THREADS=str(threads),
               SLICELAB_FUSED_BLOCKS="0", SLICELAB_OWN_DEPTHWISE="0")
    if isa:
        env["ONEDNN_MAX_CPU_ISA"] = isa
    result = subprocess.run([str(binary), "segment", "--model", str(model), "--raw-input", str(raw_input), "--logits",
                             str(raw_input) + ".out.h5", "--threads", str(threads), "--precision", precision,
                             "--timings"], capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise SystemExit(f"bench_bf16_layers: segment failed: {result.stderr.strip()}")
    layers = {}
    latency = None
    rows = False
    for line in result.stderr.splitlines():
        if line.startswith("latencies_ms"):
            latency = median([float(v) for v in line.split()[1:]])
        if "strategy  layer" in line:
            rows = True
            continue
        if rows and "timings: " in line:
            fields = line.split("timings: ", 1)[1].split()
            try:
                ms = float(fields[0])
            except ValueError:
                rows = False
                continue
            layers[fields[-1]] = (ms, fields[7])
    return layers, latency


def raw_slice(binary, model, dataset, work, threads):
    """The first of `dataset`'s slices as `model`'s network sees it (`quantize --calibration-inputs` writes them
    normalised as the checkpoint says), in `work/<model>-input.h5` (`/image`, what `segment --raw-input` reads) and
    `.npy`; returns the HDF5 path and the array."""
    import h5py
    import numpy as np
    calibration = work / "slices.h5"
    subprocess.run([str(binary), "quantize", str(model), "--calibrate", str(dataset), "--out", str(work / "q.h5"),
                    "--calibration-inputs", str(calibration), "--threads", str(threads)], check=True,
                   capture_output=True)
    with h5py.File(calibration) as f:
        x = f["calibration"][sorted(f["calibration"])[0]][:]
    path = work / f"{pathlib.Path(model).stem}-input.h5"
    with h5py.File(path, "w") as f:
        f["image"] = x
    np.save(path.with_suffix(".npy"), x)
    return path, x


def main(threads=2, rounds=3):
    binary = pathlib.Path(os.environ.get("SLICELAB_BINARY", ROOT / ".build/release/slicelab"))
    if not binary.exists():
        raise SystemExit("bench_bf16_layers: build first: swift build -c release")
    isa = os.environ.get("BENCH_ISA")
    env = dict(os.environ, **({"ONEDNN_MAX_CPU_ISA": isa} if isa else {}))
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, env=env).stdout
    effective = next((l.split(":", 1)[1].strip() for l in version.splitlines() if l.startswith("oneDNN ISA")), "?")
    if "BF16" not in effective and "AMX" not in effective:
        print(f"bench_bf16_layers: skipped, oneDNN ISA {effective} has no bf16 instructions")
        return
    demo = ROOT / "Sources/SliceLabKit/Resources/Demo"
    with tempfile.TemporaryDirectory() as folder:
        work = pathlib.Path(folder)
        cases = [("mni-brain", lambda: (demo / "models/mni-brain.h5", demo / "mni-brain")),
                 ("resnet50", lambda: make_resnet50(binary, work, threads))]
        only = os.environ.get("BENCH_BF16_CASES")
        for name, make in cases:
            if only and name not in only.split(","):
                continue
            model, dataset = make()
            raw, x = raw_slice(binary, model, dataset, work, threads)
            shape = list(x.shape)
            onnx_path = work / f"{name}.onnx"
            subprocess.run([str(binary), "export", str(model), "--format", "onnx", "--out", str(onnx_path)],
                           check=True, capture_output=True)
            kind_of = kinds(onnx_path)
            times = {p: collections.defaultdict(list) for p in ("fp32", "bf16")}
            strategies, latencies, loads = {}, {"fp32": [], "bf16": []}, []
            for _ in range(rounds):
                loads.append(os.getloadavg()[0])
                for precision in ("fp32", "bf16"):
                    layers, latency = profile(binary, model, raw, threads, precision, isa)
                    latencies[precision].append(latency)
                    for layer, (ms, strategy) in layers.items():
                        times[precision][layer].append(ms)
                        if precision == "bf16":
                            strategies[layer] = strategy
            print(f"{name} {shape}, {threads} threads, oneDNN ISA {effective}; {rounds} rounds; 1-minute load "
                  f"average at each round's start: {', '.join(f'{v:.2f}' for v in loads)}")
            per_kind = collections.defaultdict(lambda: [0.0, 0.0, 0, set()])
            for layer, values in times["fp32"].items():
                kind = kind_of.get(layer, "?")
                entry = per_kind[kind]
                entry[0] += median(values)
                entry[1] += median(times["bf16"].get(layer, values))
                entry[2] += 1
                entry[3].add(strategies.get(layer, "?"))
            print(f"  {'kind':10} {'layers':>6} {'fp32 ms':>9} {'bf16 ms':>9} {'bf16/fp32':>9}  bf16 run's strategies")
            for kind, (f32, b16, count, used) in sorted(per_kind.items()):
                print(f"  {kind:10} {count:6d} {f32:9.1f} {b16:9.1f} {b16 / f32 if f32 else 0:9.2f}  "
                      f"{', '.join(sorted(used))}")
            f32, b16 = median(latencies["fp32"]), median(latencies["bf16"])
            print(f"  whole forward: fp32 {f32:.1f} ms, bf16 {b16:.1f} ms, ratio {b16 / f32:.2f} on {effective}")
            sys.stdout.flush()


if __name__ == "__main__":
    main(int(os.environ.get("BENCH_THREADS", "2")), int(os.environ.get("BENCH_ROUNDS", "3")))
