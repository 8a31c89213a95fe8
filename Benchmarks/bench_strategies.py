"""One convolution strategy on and off, in the same run (issue #40): the strategy table's entry for an ISA is chosen by
measurement on that ISA, and this is the measurement.

BENCH_SWITCH names the strategy's measuring switch (default SLICELAB_WINOGRAD; also SLICELAB_FUSED_BLOCKS,
SLICELAB_OWN_DEPTHWISE, and SLICELAB_FUSED_INT8 with BENCH_INT8=1); each case runs `segment --raw-input` with the switch at 0 and at 1
(BENCH_VALUES, e.g. `2,4` for SLICELAB_WINOGRAD_TILE) in fresh processes alternated over BENCH_ROUNDS rounds (default
3), SLICELAB_PARITY_REPEAT=5 warm forwards each, batch 1, BENCH_THREADS threads (default 2). Cases
(BENCH_STRATEGY_CASES, default both): `resnet50` (bench_deeplab_int8's DeepLabV3-ResNet-50, 1 × 512²) and `mni-brain`
(the bundled model on one slice of its set), in fp32, or quantised with BENCH_INT8=1 (`slicelab quantize` on the
case's set, percentile calibration). Prints the median latencies, the ratio of the second value's over the first's
(median of the rounds' ratios), the largest logit difference between the two, and the oneDNN ISA. BENCH_ISA caps
oneDNN to an ISA.

Run: `.venv/bin/python Benchmarks/bench_strategies.py` after `swift build -c release`.
"""
import os
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_bf16_layers import raw_slice  # noqa: E402
from bench_deeplab_int8 import isa_and_peaks, make_resnet50, median, run_slicelab  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEMO = ROOT / "Sources/SliceLabKit/Resources/Demo"


def main(threads=2, rounds=3):
    try:
        import h5py
        import numpy as np
    except ImportError as error:
        print(f"bench_strategies: skipped, {error}; run with .venv/bin/python")
        return
    binary = pathlib.Path(os.environ.get("SLICELAB_BINARY", ROOT / ".build/release/slicelab"))
    if not binary.exists():
        raise SystemExit("bench_strategies: build first: swift build -c release")
    if os.environ.get("BENCH_ISA"):
        os.environ["ONEDNN_MAX_CPU_ISA"] = os.environ["BENCH_ISA"]
    switch = os.environ.get("BENCH_SWITCH", "SLICELAB_WINOGRAD")
    off, on = os.environ.get("BENCH_VALUES", "0,1").split(",")
    isa, _, _ = isa_and_peaks(binary, threads)
    cases = os.environ.get("BENCH_STRATEGY_CASES", "resnet50,mni-brain").split(",")
    with tempfile.TemporaryDirectory() as folder:
        work = pathlib.Path(folder)
        for case in cases:
            if case == "resnet50":
                model, dataset = make_resnet50(binary, work, threads)
                with h5py.File(work / "input.h5", "w") as f:
                    f["image"] = np.random.default_rng(1).normal(0, 1, (1, 1, 512, 512)).astype(np.float32)
                raw = work / "input.h5"
            elif case == "mni-brain":
                model, dataset = DEMO / "models/mni-brain.h5", DEMO / "mni-brain"
                raw, _ = raw_slice(binary, model, DEMO / "mni-brain", work, threads)
            else:
                raise SystemExit(f"bench_strategies: unknown case {case} (resnet50, mni-brain)")
            precision = "fp32"
            if os.environ.get("BENCH_INT8") == "1":
                precision, quantized = "int8", work / f"{case}-int8.h5"
                subprocess.run([str(binary), "quantize", str(model), "--calibrate", str(dataset), "--out",
                                str(quantized), "--threads", str(threads)], check=True, capture_output=True)
                model = quantized
            latencies, loads = {off: [], on: []}, []
            for _ in range(rounds):
                loads.append(os.getloadavg()[0])
                for value in (off, on):
                    os.environ[switch] = value
                    latencies[value].append(median(run_slicelab(binary, str(model), str(raw),
                                                                str(work / f"out{value}.h5"), threads, 5)))
            os.environ.pop(switch)
            with h5py.File(work / f"out{off}.h5") as a, h5py.File(work / f"out{on}.h5") as b:
                name = next(iter(a))
                difference = float(np.abs(a[name][:] - b[name][:]).max())
                largest = float(np.abs(a[name][:]).max())
            ratios = [b / a for a, b in zip(latencies[off], latencies[on])]
            print(f"{case}, {precision}, batch 1, {threads} threads, oneDNN ISA {isa}, {switch}; {rounds} rounds of 5; "
                  f"1-minute load at each round's start: {', '.join(f'{v:.2f}' for v in loads)}")
            for value in (off, on):
                print(f"  {switch}={value} median {median(latencies[value]):8.1f} ms "
                      f"(rounds: {', '.join(f'{v:.1f}' for v in latencies[value])})")
            print(f"  ratio {on} / {off}: {median(ratios):.3f} (rounds: {', '.join(f'{r:.3f}' for r in ratios)}) "
                  f"on {isa}; logits differ by at most {difference:.2g} (largest |logit| {largest:.3g})")


if __name__ == "__main__":
    main(int(os.environ.get("BENCH_THREADS", "2")), int(os.environ.get("BENCH_ROUNDS", "3")))
