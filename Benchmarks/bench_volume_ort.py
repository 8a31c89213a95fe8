"""A whole held-out volume through the bundled 3-D model (issue #37): `slicelab segment` against ONNX Runtime running
SliceLab's own ONNX export of the same model slice by slice with the same context and preprocessing, each the
whole job from the .nii.gz on disk to the label .nii.gz, in fresh processes under `/usr/bin/time -v`.

The ONNX Runtime side (the PEER script below, numpy and nibabel) does what `segment` does for a volume, written from
its documentation: slices along the volume's third axis as rows x columns = y x x (nibabel's `data[:, :, k].T`),
2N + 1 neighbouring slices stacked as channels with the edges replicated (N the checkpoint's `slice_context`), the
checkpoint's normalisation on each stacked input (`percentile`: numpy's linear percentiles of the stack, clip, scale
to [0, 1]), bilinear resampling with pixel centres aligned and edges clamped to the training spacing when the
slice's differs by more than 0.1 % (`BilinearResampling.resample`) and of the logits back, argmax, labels
written as uint8 NIfTI with the input's affine. SliceLab runs the same whole slices (`--tile-size 0`, what the
export computes) and, for reference, its default (tiles of the training crop, blended, as nnU-Net predicts): the
whole-slice run's labels are compared with ONNX Runtime's (agreement printed; all but a few boundary voxels).

The volume is BENCH_VOLUME (default: the first of `Datasets/cache/mni-brain-3d/imagesTs`, a whole held-out volume,
after `make datasets`; else the bundled 20-slice slab). The model is BENCH_VOLUME_MODEL (default the bundled
`mni-brain-3d.h5`). BENCH_ROUNDS alternated rounds (default 3), BENCH_THREADS threads (default 2); the ratio is the
median of the rounds' ratios of wall times. Peak RSS is printed against the input volume's float32 size plus the
model file's, the issue's bound being 1.5 x that.

A second part measures the bound where it can hold, on a volume of clinical size: the same volume tiled
BENCH_RSS_TILING times along its axes (by default 3 x 3 in-plane and about 100 slices: the bundled 156 x 192 x 20
slab becomes 468 x 576 x 100, in the file's own data type; 0 skips the part), one run each of SliceLab's default tiles, its whole slices and ONNX
Runtime, peak RSS against 1.5 x (volume + model). On the held-out volume itself that bound (17.7 MB) is below the
process's floor (`slicelab --version` alone: 46 MB).

Run: `.venv/bin/python Benchmarks/bench_volume_ort.py` after `swift build -c release`.
"""
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_deeplab_int8 import isa_and_peaks, median  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]

PEER = r"""
import json, sys, time
import nibabel as nib, numpy as np, onnxruntime as ort
source, model, out, threads, context, spacing, low, high = sys.argv[1:9]
threads, context = int(threads), int(context)
training = json.loads(spacing)
low, high = float(low), float(high)
options = ort.SessionOptions()
options.intra_op_num_threads = threads
options.inter_op_num_threads = 1
session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
name = session.get_inputs()[0].name
image = nib.load(source)
data = np.asarray(image.dataobj, dtype=np.float32)
slices = [np.ascontiguousarray(data[:, :, k].T) for k in range(data.shape[2])]
rows, columns = slices[0].shape
dx, dy = (float(v) for v in image.header.get_zooms()[:2])

def taps(count, source_count):
    x = np.clip((np.arange(count) + 0.5) * source_count / count - 0.5, 0, source_count - 1)
    lo = np.floor(x).astype(int)
    hi = np.minimum(lo + 1, source_count - 1)
    matrix = np.zeros((count, source_count), np.float32)
    matrix[np.arange(count), lo] += 1 - (x - lo)
    matrix[np.arange(count), hi] += x - lo
    return matrix

resample = training is not None and (abs(dy / training[0] - 1) > 1e-3 or abs(dx / training[1] - 1) > 1e-3)
if resample:
    to_rows = max(1, int(round(rows * dy / training[0])))
    to_columns = max(1, int(round(columns * dx / training[1])))
    down = (taps(to_rows, rows), taps(to_columns, columns))
    up = (taps(rows, to_rows), taps(columns, to_columns))
labels = np.zeros((len(slices), rows, columns), np.uint8)
forward = 0.0
for z in range(len(slices)):
    stack = np.stack([slices[min(max(z + d, 0), len(slices) - 1)] for d in range(-context, context + 1)])
    a, b = np.percentile(stack, [low, high])
    stack = (np.clip(stack, a, b) - a) / (b - a) if b > a else np.zeros_like(stack)
    if resample:
        stack = down[0] @ stack @ down[1].T
    start = time.perf_counter()
    logits = session.run(None, {name: stack[None].astype(np.float32)})[0][0]
    forward += time.perf_counter() - start
    if resample:
        logits = up[0] @ logits @ up[1].T
    labels[z] = logits.argmax(0)
nib.save(nib.Nifti1Image(np.transpose(labels, (2, 1, 0)), image.affine), out)
print(json.dumps({"forward_seconds": forward}))
"""


def timed(command, env=None):
    """Wall seconds and peak RSS (MB) of `command` under /usr/bin/time -v, and its standard output."""
    result = subprocess.run(["/usr/bin/time", "-v"] + command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise SystemExit(f"bench_volume_ort: {command[0]} failed: {result.stderr[-800:]}")
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", result.stderr)
    hours, minutes, seconds = (float(wall.group(1) or 0), float(wall.group(2)), float(wall.group(3)))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr).group(1)) / 1024
    return hours * 3600 + minutes * 60 + seconds, rss, result.stdout


def main(threads=2, rounds=3):
    try:
        import h5py
        import nibabel
        import numpy as np
        import onnxruntime  # noqa: F401
    except ImportError as error:
        print(f"bench_volume_ort: skipped, peer missing ({error}); run with .venv/bin/python")
        return
    binary = pathlib.Path(os.environ.get("SLICELAB_BINARY", ROOT / ".build/release/slicelab"))
    if not binary.exists():
        raise SystemExit("bench_volume_ort: build first: swift build -c release")
    demo = ROOT / "Sources/SliceLabKit/Resources/Demo"
    held_out = sorted((ROOT / "Datasets/cache/mni-brain-3d/imagesTs").glob("*.nii.gz"))
    volume = pathlib.Path(os.environ.get("BENCH_VOLUME") or (held_out[0] if held_out else
                                                             sorted((demo / "mni-brain-3d/imagesTs").glob("*"))[0]))
    model = pathlib.Path(os.environ.get("BENCH_VOLUME_MODEL", demo / "models/mni-brain-3d.h5"))
    isa, _, _ = isa_and_peaks(binary, threads)
    with h5py.File(model) as f:
        context = int(f.attrs.get("slice_context", 0))
        spacing = f.attrs.get("training_spacing")
        spacing = json.dumps([float(v) for v in spacing]) if spacing is not None else "null"
        preprocessing = json.loads(f.attrs["preprocessing"])
    if preprocessing.get("normalize") != "percentile":
        raise SystemExit(f"bench_volume_ort: the peer implements percentile normalisation, not {preprocessing}")
    shape = nibabel.load(volume).shape
    input_mb = np.prod(shape) * 4 / 2**20
    model_mb = model.stat().st_size / 2**20
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    with tempfile.TemporaryDirectory() as folder:
        work = pathlib.Path(folder)
        onnx = work / "model.onnx"
        subprocess.run([str(binary), "export", str(model), "--format", "onnx", "--out", str(onnx)], check=True,
                       capture_output=True)
        (work / "peer.py").write_text(PEER)
        ours, tiled, peer, loads = [], [], [], []
        for _ in range(rounds):
            loads.append(os.getloadavg()[0])
            segment = [str(binary), "segment", str(volume), "--model", str(model), "--threads", str(threads)]
            ours.append(timed(segment + ["--tile-size", "0", "--out", str(work / "slicelab.nii.gz")]))
            tiled.append(timed(segment + ["--out", str(work / "tiled.nii.gz")]))
            peer.append(timed([sys.executable, str(work / "peer.py"), str(volume), str(onnx),
                               str(work / "ort.nii.gz"), str(threads), str(context), spacing,
                               str(preprocessing.get("low", 0.5)), str(preprocessing.get("high", 99.5))], env))
        a = np.asarray(nibabel.load(work / "slicelab.nii.gz").dataobj)
        b = np.asarray(nibabel.load(work / "ort.nii.gz").dataobj)
        agreement = float((a.astype(int) == b.astype(int)).mean()) if a.shape == b.shape else float("nan")
        print(f"volume {volume.name} {list(shape)} ({input_mb:.1f} MB as float32), model {model.name} "
              f"({model_mb:.1f} MB), {threads} threads, oneDNN ISA {isa}; {rounds} rounds; 1-minute load average at each "
              f"round's start: {', '.join(f'{v:.2f}' for v in loads)}")
        for name, runs in (("SliceLab, whole slices", ours), ("ONNX Runtime, slice by slice", peer),
                           ("SliceLab, default tiles", tiled)):
            wall = median([w for w, _, _ in runs])
            print(f"  {name:30} median {wall:7.2f} s ({wall / shape[2] * 1e3:.1f} ms a slice), peak RSS "
                  f"{median([r for _, r, _ in runs]):7.1f} MB (rounds: {', '.join(f'{w:.2f} s' for w, _, _ in runs)})")
        forward = median([json.loads(out.strip().splitlines()[-1])["forward_seconds"] for _, _, out in peer])
        print(f"  of ONNX Runtime's wall time, its forward passes alone: {forward:.2f} s (the rest: the interpreter, "
              f"imports, session, reading, numpy pre- and post-processing, writing)")
        ratios = [x[0] / y[0] for x, y in zip(ours, peer)]
        print(f"  ratio SliceLab (whole slices) / ONNX Runtime: {median(ratios):.3f} (rounds: {', '.join(f'{r:.3f}' for r in ratios)}) "
              f"on {isa}; labels agree on {100 * agreement:.3f} % of voxels")
        bound = 1.5 * (input_mb + model_mb)
        print(f"  SliceLab peak RSS {median([r for _, r, _ in ours]):.1f} MB against 1.5 x (volume + model) = {bound:.1f} MB")
        default_tiling = f"3,3,{max(1, round(100 / shape[2]))}"  # about 100 slices of 468 x 576
        tiling = [int(v) for v in os.environ.get("BENCH_RSS_TILING", default_tiling).split(",")]
        if any(tiling):
            large_volume_rss(binary, work, onnx, volume, model, tiling, threads, context, spacing, preprocessing, env)


def large_volume_rss(binary, work, onnx, volume, model, tiling, threads, context, spacing, preprocessing, env):
    """Peak RSS of one run each on `volume` tiled `tiling` times (see the module's note), in `work`, which holds the
    export `onnx` and the peer's script."""
    import nibabel
    import numpy as np
    image = nibabel.load(volume)
    data = np.tile(np.asarray(image.dataobj), tiling)
    input_mb, model_mb = data.size * 4 / 2**20, model.stat().st_size / 2**20
    large = work / "large.nii.gz"
    nibabel.save(nibabel.Nifti1Image(data, image.affine, image.header), large)
    segment = [str(binary), "segment", str(large), "--model", str(model), "--threads", str(threads)]
    runs = {
        "SliceLab, default tiles": timed(segment + ["--out", str(work / "large-tiled.nii.gz")]),
        "SliceLab, whole slices": timed(segment + ["--tile-size", "0", "--out", str(work / "large-whole.nii.gz")]),
        "ONNX Runtime, slice by slice": timed(
            [sys.executable, str(work / "peer.py"), str(large), str(onnx), str(work / "large-ort.nii.gz"),
             str(threads), str(context), spacing, str(preprocessing.get("low", 0.5)),
             str(preprocessing.get("high", 99.5))], env),
    }
    bound = 1.5 * (input_mb + model_mb)
    print(f"large volume: {volume.name} tiled {tiling} = {list(data.shape)} {data.dtype} ({input_mb:.1f} MB as "
          f"float32); bound 1.5 x (volume + model) = {bound:.1f} MB; one run each")
    for name, (wall, rss, _) in runs.items():
        verdict = "within" if rss <= bound else "above"
        print(f"  {name:30} {wall:7.2f} s, peak RSS {rss:7.1f} MB ({rss / bound:.2f} x the bound, {verdict})")


if __name__ == "__main__":
    main(int(os.environ.get("BENCH_THREADS", "2")), int(os.environ.get("BENCH_ROUNDS", "3")))
