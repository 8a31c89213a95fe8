"""DeepLabV3+ against the bundled DeepLabV3 (issue #37): what the decoder saves on the main job, same slice, same run,
SliceLab and ONNX Runtime on each model's own export.

"v3" is the bundled `mni-brain` model (DeepLabV3-MobileNetV2, output stride 8, ASPP width 64, input scale 4: 16 x the
pixels). "v3plus" is DeepLabV3+ over the same backbone at output stride 16, decoder width 64, input scale 2 (logits
at the same effective stride 2), the configuration retrained on `mni-brain` in issue #37: BENCH_DECODER_MODEL=PATH
times a trained checkpoint of it; otherwise `slicelab train --steps 1` makes one on the bundled set (the weights do
not change the time). Both run `segment --raw-input` on one bundled slice (233 x 197, normalised as the checkpoint
says), batch 1, BENCH_THREADS threads (default 2), SLICELAB_PARITY_REPEAT=5 warm repeats per process, in fresh
processes alternated over BENCH_ROUNDS rounds (default 5); a ratio is the median of the rounds' ratios of median
latencies. The oneDNN ISA is printed with every figure.

Run: `.venv/bin/python Benchmarks/bench_decoder.py` after `swift build -c release`.
"""
import os
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_bf16_layers import raw_slice  # noqa: E402
from bench_deeplab_int8 import isa_and_peaks, median, run_peer, run_slicelab  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODEL = "Sources/SliceLabKit/Resources/Demo/models/mni-brain.h5"


def v3plus_model(binary, work, threads):
    """BENCH_DECODER_MODEL, else the DeepLabV3+ configuration trained for one step on the bundled set."""
    given = os.environ.get("BENCH_DECODER_MODEL")
    if given:
        return pathlib.Path(given), given
    path = work / "v3plus.h5"
    subprocess.run([str(binary), "train", str(ROOT / "Sources/SliceLabKit/Resources/Demo/mni-brain"), "--arch",
                    "deeplabv3_mobilenet_v2", "--decoder", "v3plus", "--num-classes", "3", "--steps", "1", "--batch",
                    "2", "--crop", "64", "--output-stride", "16", "--aspp-channels", "64", "--input-scale", "2",
                    "--seed", "1", "--threads", str(threads), "--out", str(path)], check=True, capture_output=True)
    return path, "its configuration trained 1 step (time only)"


def main(threads=2, repeats=5, rounds=5):
    try:
        import h5py  # noqa: F401 (raw_slice's)
        import numpy  # noqa: F401
    except ImportError as error:
        print(f"bench_decoder: skipped, {error}; run with .venv/bin/python")
        return
    binary = pathlib.Path(os.environ.get("SLICELAB_BINARY", ROOT / ".build/release/slicelab"))
    if not binary.exists():
        raise SystemExit("bench_decoder: build first: swift build -c release")
    isa, _, _ = isa_and_peaks(binary, threads)
    demo = ROOT / "Sources/SliceLabKit/Resources/Demo/mni-brain"
    with tempfile.TemporaryDirectory() as folder:
        work = pathlib.Path(folder)
        candidate, source = v3plus_model(binary, work, threads)
        models = {"v3": ROOT / MODEL, "v3plus": candidate}
        # Both bundled-style models normalise with percentiles, so the slice `v3` sees is the one `v3plus` sees.
        raw, x = raw_slice(binary, models["v3"], demo, work, threads)
        for name, model in models.items():
            subprocess.run([str(binary), "export", str(model), "--format", "onnx", "--out", str(work / f"{name}.onnx")],
                           check=True, capture_output=True)
        latencies = {f"{engine} {name}": [] for name in models for engine in ("SliceLab", "ORT")}
        loads = []
        for _ in range(rounds):
            loads.append(os.getloadavg()[0])
            for name, model in models.items():
                latencies[f"SliceLab {name}"].append(
                    median(run_slicelab(binary, str(model), str(raw), str(work / "out.h5"), threads,
                                        repeats)))
                result, error = run_peer("ort-fp32", str(work / f"{name}.onnx"), str(raw.with_suffix(".npy")), threads,
                                         repeats)
                if error:
                    raise SystemExit(f"bench_decoder: ONNX Runtime failed on {name}: {error}")
                latencies[f"ORT {name}"].append(median(result["times"]))
        print(f"mni-brain {list(x.shape)}, fp32, batch 1, {threads} threads, oneDNN ISA {isa}; v3 = {MODEL}, "
              f"v3plus = {source}; {rounds} rounds of {repeats}; 1-minute load average at each round's start: "
              f"{', '.join(f'{v:.2f}' for v in loads)}")
        for engine, values in latencies.items():
            print(f"  {engine:16} median {median(values):8.1f} ms (rounds: {', '.join(f'{v:.1f}' for v in values)})")
        for ours, other in (("SliceLab v3plus", "SliceLab v3"), ("ORT v3plus", "ORT v3"),
                            ("SliceLab v3plus", "ORT v3plus"), ("SliceLab v3", "ORT v3")):
            ratios = [a / b for a, b in zip(latencies[ours], latencies[other])]
            print(f"  ratio {ours} / {other}: {median(ratios):.3f} (rounds: "
                  f"{', '.join(f'{r:.3f}' for r in ratios)}) on {isa}")


if __name__ == "__main__":
    main(int(os.environ.get("BENCH_THREADS", "2")), 5, int(os.environ.get("BENCH_ROUNDS", "5")))
