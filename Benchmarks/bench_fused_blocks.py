"""Our own kernels against oneDNN's on the same model, and against ONNX Runtime (issue #37): fused inverted-residual
blocks, the own depthwise convolution, the fused stem and fused separable convolutions.

SliceLab runs MobileNetV2's memory-bound blocks in one pass (`FusedInvertedResidual`), depthwise convolutions on its
own kernel (`OwnDepthwiseConvolution`), the input's upscale with the stem and the first block in one pass (`FusedStem`)
and separable convolutions of large rates in one pass where the oneDNN ISA's strategy table says so;
SLICELAB_FUSED_BLOCKS, SLICELAB_OWN_DEPTHWISE, SLICELAB_FUSED_STEM and SLICELAB_FUSED_SEPARABLE (0 or 1) override it.
Four configurations: `oneDNN` (all off: oneDNN's kernels unit by unit), `fused` (blocks fused), `own` (blocks fused and
own depthwise), `all` (everything, the default on AVX-512). For each model (the bundled `mni-brain` unless BENCH_FUSED_BUNDLED=0, and
BENCH_FUSED_MODELS=PATH[,PATH] more), one slice of the bundled set as the model sees it: `segment --raw-input
--timings` in each configuration and ONNX Runtime on SliceLab's own export, in fresh processes alternated over
BENCH_ROUNDS rounds (default 3), SLICELAB_PARITY_REPEAT=5 warm repeats each, batch 1, BENCH_THREADS threads (default
2). BENCH_ISA caps oneDNN (and so the kernels) to an ISA. Prints the whole forward's median latencies, the ratios
(median of the rounds' ratios), and each block's and depthwise unit's time per configuration from the roofline rows.
The oneDNN ISA is printed with every figure.

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


# SLICELAB_FUSED_BLOCKS, _OWN_DEPTHWISE, _FUSED_STEM, _FUSED_SEPARABLE.
CONFIGURATIONS = {"oneDNN": "0000", "fused": "1000", "own": "1100", "all": "1111"}


def profile(binary, model, raw, threads, configuration, isa):
    """The median latency (ms) of one process and the ms over its forwards of each backbone block (its units summed)
    and each depthwise unit."""
    fused, own, stem, separable = CONFIGURATIONS[configuration]
    env = dict(os.environ, SLICELAB_PARITY_REPEAT="5", OMP_NUM_THREADS=str(threads), SLICELAB_FUSED_BLOCKS=fused,
               SLICELAB_OWN_DEPTHWISE=own, SLICELAB_FUSED_STEM=stem, SLICELAB_FUSED_SEPARABLE=separable)
    if isa:
        env["ONEDNN_MAX_CPU_ISA"] = isa
    result = subprocess.run([str(binary), "segment", "--model", str(model), "--raw-input", str(raw), "--logits",
                             str(raw) + ".out.h5", "--threads", str(threads), "--timings"],
                            capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise SystemExit(f"bench_fused_blocks: segment failed: {result.stderr.strip()}")
    latency, rows, fused_rows = None, collections.defaultdict(float), 0
    for line in result.stderr.splitlines():
        if line.startswith("latencies_ms"):
            latency = median([float(v) for v in line.split()[1:]])
        fields = line.split("timings: ", 1)[1].split() if "timings: " in line else []
        if len(fields) > 8 and re.fullmatch(r"[0-9.]+", fields[0]):
            # A block's units, or its fused row; the stem (`features.0.0`) and block 1 together, which the fused
            # stem's row ("… + encoder.features.1") covers; an ASPP branch's units, or its fused separable row.
            block = re.match(r"(.*(?:backbone|features)\.(\d+))(\.conv\..*|\.0)?$", fields[-1])
            branch = re.match(r"(.*aspp\.0\.convs\.\d+\.0)(\.[01])?$", fields[-1])
            if block and (block.group(3) or "fused-block" in fields or "fused-stem" in fields):
                rows["stem and block 1" if int(block.group(2)) <= 1 else block.group(1)] += float(fields[0])
            elif branch:
                rows[branch.group(1)] += float(fields[0])
            elif "dw" in line or "own-depthwise" in fields:
                rows[fields[-1]] += float(fields[0])
            fused_rows += "fused-block" in fields
    if fused == "1" and not fused_rows:
        raise SystemExit("bench_fused_blocks: no block ran fused (no kernels for this ISA?)")
    return latency, rows


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
    models = ([DEMO / "models/mni-brain.h5"] if os.environ.get("BENCH_FUSED_BUNDLED") != "0" else []) + [
        pathlib.Path(p) for p in os.environ.get("BENCH_FUSED_MODELS", "").split(",") if p]
    with tempfile.TemporaryDirectory() as folder:
        work = pathlib.Path(folder)
        for model in models:
            raw, x = raw_slice(binary, model, DEMO / "mni-brain", work, threads)
            onnx_path = work / f"{model.stem}.onnx"
            subprocess.run([str(binary), "export", str(model), "--format", "onnx", "--out", str(onnx_path)],
                           check=True, capture_output=True)
            latencies = {name: [] for name in list(CONFIGURATIONS) + ["ORT"]}
            rows = {name: collections.defaultdict(list) for name in CONFIGURATIONS}
            loads = []
            for _ in range(rounds):
                loads.append(os.getloadavg()[0])
                for name in CONFIGURATIONS:
                    latency, per_row = profile(binary, model, raw, threads, name, cap)
                    latencies[name].append(latency)
                    for row, ms in per_row.items():
                        rows[name][row].append(ms)
                result, error = run_peer("ort-fp32", str(onnx_path), str(raw.with_suffix(".npy")), threads, 5)
                if error:
                    raise SystemExit(f"bench_fused_blocks: ONNX Runtime failed on {model.name}: {error}")
                latencies["ORT"].append(median(result["times"]))
            print(f"{model.name} {list(x.shape)}, fp32, batch 1, {threads} threads, oneDNN ISA {isa}; {rounds} rounds "
                  f"of 5; 1-minute load at each round's start: {', '.join(f'{v:.2f}' for v in loads)}")
            for name, values in latencies.items():
                print(f"  {name:8} median {median(values):8.1f} ms (rounds: {', '.join(f'{v:.1f}' for v in values)})")
            for ours, other in (("fused", "oneDNN"), ("own", "fused"), ("all", "own"), ("all", "oneDNN"),
                                ("all", "ORT"), ("oneDNN", "ORT")):
                ratios = [a / b for a, b in zip(latencies[ours], latencies[other])]
                print(f"  ratio {ours} / {other}: {median(ratios):.3f} (rounds: {', '.join(f'{r:.3f}' for r in ratios)})"
                      f" on {isa}")
            print("  per block, ASPP branch and depthwise unit, ms over 5 forwards (median of rounds): "
                  + " / ".join(CONFIGURATIONS))
            for row in rows["oneDNN"]:
                if not any(row in rows[name] for name in ("fused", "own", "all")):
                    continue  # a depthwise unit inside a block fused in both other configurations
                print(f"    {row:32} " + " ".join(f"{median(rows[name].get(row, [float('nan')])):8.1f}"
                                                   for name in CONFIGURATIONS))


if __name__ == "__main__":
    main(int(os.environ.get("BENCH_THREADS", "2")), int(os.environ.get("BENCH_ROUNDS", "3")))
