"""Fused inverted-residual blocks against the same model unit by unit, and against ONNX Runtime (issue #37).

SliceLab runs MobileNetV2's memory-bound blocks in one pass (`FusedInvertedResidual`) where the oneDNN ISA's strategy
table says so; SLICELAB_FUSED_BLOCKS=0 runs every block unit by unit, =1 fuses on any ISA with kernels (AVX2's entry
leaves them off). For each model (the bundled `mni-brain`, and BENCH_FUSED_MODELS=PATH[,PATH] more), one slice of the
bundled set as the model sees it: `segment --raw-input --timings` with fusion off and on, and ONNX Runtime on
SliceLab's own export, in fresh processes alternated over BENCH_ROUNDS rounds (default 3), SLICELAB_PARITY_REPEAT=5 warm
repeats each, batch 1, BENCH_THREADS threads (default 2). BENCH_ISA caps oneDNN (and so the kernels) to an ISA.
Prints the whole forward's median latencies, the ratios (median of the rounds' ratios), and each block's time fused
against its units' unfused, from the roofline rows. The oneDNN ISA is printed with every figure.

Run: `.venv/bin/python Benchmarks/bench_fused_blocks.py` after `swift build -c release`.
"""
import collections
import os
import pathlib
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_bf16_layers import raw_slice  # noqa: E402
from bench_deeplab_int8 import isa_and_peaks, median, run_peer  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEMO = ROOT / "Sources/SliceLabKit/Resources/Demo"


def profile(binary, model, raw, threads, fused, isa):
    """The median latency (ms) of one process and each backbone block's ms over its forwards (its units summed)."""
    env = dict(os.environ, SLICELAB_PARITY_REPEAT="5", OMP_NUM_THREADS=str(threads),
               SLICELAB_FUSED_BLOCKS="1" if fused else "0")
    if isa:
        env["ONEDNN_MAX_CPU_ISA"] = isa
    result = subprocess.run([str(binary), "segment", "--model", str(model), "--raw-input", str(raw), "--logits",
                             str(raw) + ".out.h5", "--threads", str(threads), "--timings"],
                            capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise SystemExit(f"bench_fused_blocks: segment failed: {result.stderr.strip()}")
    latency, blocks, fused_rows = None, collections.defaultdict(float), 0
    for line in result.stderr.splitlines():
        if line.startswith("latencies_ms"):
            latency = median([float(v) for v in line.split()[1:]])
        fields = line.split("timings: ", 1)[1].split() if "timings: " in line else []
        if len(fields) > 8 and re.fullmatch(r"[0-9.]+", fields[0]):
            block = re.match(r"(.*backbone\.\d+|.*features\.\d+)(\.conv\..*)?$", fields[-1])
            if block and (block.group(2) or "fused-block" in fields):
                blocks[block.group(1)] += float(fields[0])
            fused_rows += "fused-block" in fields
    if fused and not fused_rows:
        raise SystemExit("bench_fused_blocks: no block ran fused (no kernels for this ISA?)")
    return latency, blocks


def main(threads=2, rounds=3):
    try:
        import h5py  # noqa: F401 (raw_slice's)
        import numpy  # noqa: F401
    except ImportError as error:
        print(f"bench_fused_blocks: skipped, {error}; run with .venv/bin/python")
        return
    binary = pathlib.Path(os.environ.get("SLICELAB_BINARY", ROOT / ".build/release/slicelab"))
    if not binary.exists():
        raise SystemExit("bench_fused_blocks: build first: swift build -c release")
    cap = os.environ.get("BENCH_ISA")
    if cap:
        os.environ["ONEDNN_MAX_CPU_ISA"] = cap
    isa, _, _ = isa_and_peaks(binary, threads)
    models = [DEMO / "models/mni-brain.h5"] + [pathlib.Path(p) for p in os.environ.get("BENCH_FUSED_MODELS", "").split(",")
                                               if p]
    with tempfile.TemporaryDirectory() as folder:
        work = pathlib.Path(folder)
        for model in models:
            raw, x = raw_slice(binary, model, DEMO / "mni-brain", work, threads)
            onnx_path = work / f"{model.stem}.onnx"
            subprocess.run([str(binary), "export", str(model), "--format", "onnx", "--out", str(onnx_path)],
                           check=True, capture_output=True)
            latencies = {"unfused": [], "fused": [], "ORT": []}
            blocks = {"unfused": collections.defaultdict(list), "fused": collections.defaultdict(list)}
            loads = []
            for _ in range(rounds):
                loads.append(os.getloadavg()[0])
                for kind in ("unfused", "fused"):
                    latency, per_block = profile(binary, model, raw, threads, kind == "fused", cap)
                    latencies[kind].append(latency)
                    for name, ms in per_block.items():
                        blocks[kind][name].append(ms)
                result, error = run_peer("ort-fp32", str(onnx_path), str(raw.with_suffix(".npy")), threads, 5)
                if error:
                    raise SystemExit(f"bench_fused_blocks: ONNX Runtime failed on {model.name}: {error}")
                latencies["ORT"].append(median(result["times"]))
            print(f"{model.name} {list(x.shape)}, fp32, batch 1, {threads} threads, oneDNN ISA {isa}; {rounds} rounds "
                  f"of 5; 1-minute load at each round's start: {', '.join(f'{v:.2f}' for v in loads)}")
            for kind, values in latencies.items():
                print(f"  {kind:8} median {median(values):8.1f} ms (rounds: {', '.join(f'{v:.1f}' for v in values)})")
            for ours, other in (("fused", "unfused"), ("fused", "ORT"), ("unfused", "ORT")):
                ratios = [a / b for a, b in zip(latencies[ours], latencies[other])]
                print(f"  ratio SliceLab {ours} / {'ONNX Runtime' if other == 'ORT' else 'SliceLab ' + other}: "
                      f"{median(ratios):.3f} (rounds: {', '.join(f'{r:.3f}' for r in ratios)}) on {isa}")
            print("  per block, ms over 5 forwards (median of rounds): unfused -> fused (ratio)")
            for name in blocks["unfused"]:
                a, b = median(blocks["unfused"][name]), median(blocks["fused"].get(name, [0.0]))
                print(f"    {name:16} {a:8.1f} -> {b:8.1f} ({b / a:.2f})")


if __name__ == "__main__":
    main(int(os.environ.get("BENCH_THREADS", "2")), int(os.environ.get("BENCH_ROUNDS", "3")))
