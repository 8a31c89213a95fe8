"""The bundled models before and after issue #37's retraining: what DeepLabV3+ at input scale 2 saves on the main job
against DeepLabV3 at input scale 4, same slice, same run, SliceLab and ONNX Runtime on each model's own export.

"before" is each bundled model as the commit BENCH_DECODER_BEFORE (default 7bfc975, the last with the DeepLabV3
models: MobileNetV2, output stride 8, ASPP width 64, input scale 4, 16 x the pixels) holds it, read with `git show`;
"after" is the bundled model of the working tree (DeepLabV3+ over the same backbone, output stride 16, decoder
width 64, input scale 2: logits at the same effective stride 2). A model the retraining left unchanged is timed
once and said so. Each model runs `segment --raw-input` on its set's first bundled slice as the network sees it
(normalised as the checkpoint says; the same slice for both), batch 1, BENCH_THREADS threads (default 2),
5 warm repeats per process, in fresh processes alternated over BENCH_ROUNDS rounds (default 5); a ratio is the
median of the rounds' ratios of median latencies. BENCH_DECODER_SETS (comma-separated) picks the models. The oneDNN
ISA is printed with every figure.

Run: `.venv/bin/python Benchmarks/bench_decoder.py` after `swift build -c release`.
"""
import hashlib
import os
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_bf16_layers import raw_slice  # noqa: E402
from bench_deeplab_int8 import isa_and_peaks, median, run_peer, run_slicelab  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEMO = "Sources/SliceLabKit/Resources/Demo"
SETS = ("mni-brain", "brain-lesion", "mni-brain-3d")


def before_model(name, revision, work):
    """The bundled model `name` as commit `revision` holds it, written into `work`."""
    path = work / f"{name}-before.h5"
    blob = subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:{DEMO}/models/{name}.h5"], check=True,
                          capture_output=True).stdout
    path.write_bytes(blob)
    return path


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
    revision = os.environ.get("BENCH_DECODER_BEFORE", "7bfc975")
    isa, _, _ = isa_and_peaks(binary, threads)
    with tempfile.TemporaryDirectory() as folder:
        work = pathlib.Path(folder)
        models = {}
        for name in os.environ.get("BENCH_DECODER_SETS", ",".join(SETS)).split(","):
            before, after = before_model(name, revision, work), ROOT / DEMO / "models" / f"{name}.h5"
            same = hashlib.sha256(before.read_bytes()).digest() == hashlib.sha256(after.read_bytes()).digest()
            raw, x = raw_slice(binary, before, ROOT / DEMO / name, work, threads)
            models[f"{name} before"] = (before, raw)
            if not same:
                models[f"{name} after"] = (after, raw)
            print(f"{name}: slice {list(x.shape)}; before = {revision}:{DEMO}/models/{name}.h5"
                  + ("; unchanged since, timed once" if same else f"; after = {DEMO}/models/{name}.h5"))
        for key, (model, _) in models.items():
            subprocess.run([str(binary), "export", str(model), "--format", "onnx", "--out",
                            str(work / f"{key.replace(' ', '-')}.onnx")], check=True, capture_output=True)
        latencies = {f"{engine} {key}": [] for key in models for engine in ("SliceLab", "ORT")}
        loads = []
        for _ in range(rounds):
            loads.append(os.getloadavg()[0])
            for key, (model, raw) in models.items():
                latencies[f"SliceLab {key}"].append(
                    median(run_slicelab(binary, str(model), str(raw), str(work / "out.h5"), threads, repeats)))
                result, error = run_peer("ort-fp32", str(work / f"{key.replace(' ', '-')}.onnx"),
                                         str(raw.with_suffix(".npy")), threads, repeats)
                if error:
                    raise SystemExit(f"bench_decoder: ONNX Runtime failed on {key}: {error}")
                latencies[f"ORT {key}"].append(median(result["times"]))
        print(f"fp32, batch 1, {threads} threads, oneDNN ISA {isa}; {rounds} rounds of {repeats}; 1-minute load "
              f"average at each round's start: {', '.join(f'{v:.2f}' for v in loads)}")
        for engine, values in latencies.items():
            print(f"  {engine:28} median {median(values):8.1f} ms (rounds: {', '.join(f'{v:.1f}' for v in values)})")
        pairs = [(f"SliceLab {key}", f"ORT {key}") for key in models]
        pairs += [(f"{engine} {key}", f"{engine} {key.replace('after', 'before')}") for key in models
                  if key.endswith("after") for engine in ("SliceLab", "ORT")]
        for ours, other in pairs:
            ratios = [a / b for a, b in zip(latencies[ours], latencies[other])]
            print(f"  ratio {ours} / {other}: {median(ratios):.3f} (rounds: "
                  f"{', '.join(f'{r:.3f}' for r in ratios)}) on {isa}")


if __name__ == "__main__":
    main(int(os.environ.get("BENCH_THREADS", "2")), 5, int(os.environ.get("BENCH_ROUNDS", "5")))
