"""Throughput of `slicelab segment --batch N` (issue #19): a synthetic series of 300 slices of 512 x 512 (int16, as
HDF5 `/image` chunked by slice, which `segment` reads one slice at a time; BENCH_FORMAT=nii writes NIfTI instead,
which the NIfTI reader holds whole as float32; BENCH_SLICES overrides the count) through `segment` at batch 1, 4
and 8 (BENCH_BATCHES) for each precision the CPU runs (fp32, and int8 on every x86-64 CPU; bf16 is not built),
one fresh process each.

Every line names oneDNN's effective ISA and reports slices per second (whole run: reading, forwards, writing the
streamed HDF5 label map), the achieved TFLOP/s or TOPS in the forward passes against the ISA's peak (both from
`segment --timings`: 2 x the convolutions' multiply-adds, counted from the layer shapes, over the forward time; the
peak is multiply-adds per cycle per core x threads x the clock /proc/cpuinfo reports, an assumption), and the
peak RSS (GNU time's maximum resident set). The ratio printed is slices per second against batch 1 of the same
precision in the same run. The multiply-add count `segment` reports per slice is checked against ONNX shape
inference on the exported model (the same count bench_deeplab_int8.py uses), and every batch size's label map
against the first's (bit-identical, or the benchmark fails).

Peak RSS flat in the slice count: batch 1 and the largest batch also run on a series with a third of the slices,
and the RSS of both lengths is printed side by side. BENCH_MODEL=tiny swaps in a smaller seeded DeepLabV3-MobileNetV2
(output stride 16, ASPP 64, made by `train` for 2 steps) to show the RSS at 300 slices in minutes rather than hours.

The model is the DeepLabV3-ResNet-50 of bench_deeplab_int8.py (2 training steps on a generated RGB set, so a
1-channel input, 21 classes; only its speed means something), quantised with `slicelab quantize` on that set.
Run alone: `.venv/bin/python Benchmarks/bench_segment_batch.py` after `swift build -c release` (SLICELAB_BINARY
picks another binary); 300 slices take about an hour per precision and batch size on 2 loaded cores.
"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_deeplab_int8 import conv_multiply_adds, make_resnet50  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]


def write_series(path, slices, size=512, seed=3):
    """A CT-like int16 series: an ellipse of soft tissue with brighter discs that move along z, noise, 0.7 mm
    in-plane and 2.5 mm slices; NIfTI (.nii.gz) or HDF5 `/image` [z, y, x] chunked by slice (.h5)."""
    import nibabel as nib
    import numpy as np
    if str(path).endswith(".h5"):
        import h5py
        with h5py.File(path, "w") as f:
            d = f.create_dataset("image", (slices, size, size), np.int16, chunks=(1, size, size))
            for z in range(slices):
                d[z] = _plane(np, generator_for(np, seed, z), z, slices, size)
            d.attrs["spacing"] = [0.7, 0.7, 2.5]  # (row, column, slice) without geometry_version
        return
    data = np.empty((size, size, slices), np.int16)
    for z in range(slices):
        data[:, :, z] = _plane(np, generator_for(np, seed, z), z, slices, size).T
    nib.save(nib.Nifti1Image(data, np.diag([0.7, 0.7, 2.5, 1.0])), str(path))


def generator_for(np, seed, z):
    return np.random.default_rng([seed, z])


def _plane(np, generator, z, slices, size):
    """Slice z of the series [y, x] as int16."""
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size - 0.5
    body = (xx / 0.42) ** 2 + (yy / 0.35) ** 2 < 1
    t = z / max(1, slices - 1)
    disc = (xx - 0.2 * np.cos(6 * t)) ** 2 + (yy - 0.15 * np.sin(6 * t)) ** 2 < 0.01
    plane = np.where(body, 40.0, -1000.0) + np.where(disc, 300.0, 0.0) + generator.normal(0, 20, (size, size))
    return plane.astype(np.int16)


def segment(binary, model, series, out, batch, threads):
    """One `segment --timings` run: (slices/s, achieved T(FL)OP/s, peak T(FL)OP/s, ISA, multiply-adds,
    slices, peak RSS in MB)."""
    command = ["/usr/bin/time", "-f", "maxrss_kb %M", str(binary), "segment", str(series), "--model", str(model),
               "--out", str(out), "--batch", str(batch), "--threads", str(threads), "--timings"]
    if not pathlib.Path("/usr/bin/time").exists():
        command = command[3:]
    result = subprocess.run(command, capture_output=True, text=True,
                            env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    if result.returncode != 0:
        raise SystemExit(f"bench_segment_batch: segment failed: {result.stderr[-400:]}")
    text = result.stderr
    rate = re.search(r"timings: (\d+) slice\(s\) in ([\d.]+) s, ([\d.]+) slices/s", text)
    work = re.search(r"timings: (\d+) multiply-adds .*achieved ([\d.]+) \S+ \S+ against the peak ([\d.]+) \S+ "
                     r"\(oneDNN ISA (\S+):", text)
    rss = re.search(r"maxrss_kb (\d+)", text) or re.search(r"peak RSS ([\d.]+) MB", text)
    rss_mb = float(rss.group(1)) / (1024 if rss.re.pattern.startswith("maxrss") else 1)
    slices = int(rate.group(1))
    return (float(rate.group(3)), float(work.group(2)), float(work.group(3)), work.group(4), int(work.group(1)),
            slices, rss_mb)


def main(threads=2):
    try:
        import h5py
        import nibabel  # noqa: F401
        import numpy as np
    except ImportError as error:
        print(f"bench_segment_batch: skipped, missing {error}; run with .venv/bin/python")
        return
    binary = pathlib.Path(os.environ.get("SLICELAB_BINARY", ROOT / ".build/release/slicelab"))
    if not binary.exists():
        raise SystemExit("bench_segment_batch: build first: swift build -c release")
    slices = int(os.environ.get("BENCH_SLICES", "300"))
    batches = [int(b) for b in os.environ.get("BENCH_BATCHES", "1,4,8").split(",")]
    precisions = os.environ.get("BENCH_PRECISIONS", "fp32,int8").split(",")
    with tempfile.TemporaryDirectory() as folder:
        work = pathlib.Path(folder)
        checkpoint, dataset = make_resnet50(binary, work, threads)
        name = "DeepLabV3-ResNet-50"
        if os.environ.get("BENCH_MODEL") == "tiny":
            name, checkpoint = "DeepLabV3-MobileNetV2 (OS 16, ASPP 64)", work / "tiny.h5"
            subprocess.run([str(binary), "train", str(dataset), "--arch", "deeplabv3_mobilenet_v2", "--num-classes",
                            "21", "--decoder", "v3", "--output-stride", "16", "--aspp-channels", "64", "--steps", "2", "--batch", "2",
                            "--crop", "64", "--seed", "1", "--threads", str(threads), "--out", str(checkpoint)],
                           check=True, capture_output=True)
        models = {"fp32": checkpoint, "int8": work / "model-int8.h5"}
        if "int8" in precisions:
            subprocess.run([str(binary), "quantize", str(checkpoint), "--calibrate", str(dataset), "--out",
                            str(models["int8"]), "--threads", str(threads)], check=True, capture_output=True)
        suffix = ".nii.gz" if os.environ.get("BENCH_FORMAT", "h5") == "nii" else ".h5"
        series = work / f"series{suffix}"
        short = work / f"short{suffix}"
        write_series(series, slices)
        write_series(short, max(1, slices // 3))
        onnx_count = None
        try:
            subprocess.run([str(binary), "export", str(checkpoint), "--format", "onnx", "--out",
                            str(work / "model.onnx")], check=True, capture_output=True)
            onnx_count = conv_multiply_adds(str(work / "model.onnx"), [1, 1, 512, 512])
        except (ImportError, subprocess.CalledProcessError) as error:
            print(f"  (multiply-add cross-check skipped: {error})")
        print(f"segment --batch: {name} 1x512x512 K=21, {slices} slices ({series.name}), "
              f"{threads} threads, binary {binary}")
        for precision in precisions:
            base = None
            for batch in batches:
                out = work / f"{precision}-{batch}.h5"
                per_second, achieved, peak, isa, multiply_adds, done, rss = segment(
                    binary, models[precision], series, out, batch, threads)
                if batch != batches[0]:
                    with h5py.File(out) as a, h5py.File(work / f"{precision}-{batches[0]}.h5") as b:
                        if not np.array_equal(a["labels"][()], b["labels"][()]):
                            raise SystemExit(f"bench_segment_batch: {precision} labels at batch {batch} differ from "
                                             f"batch {batches[0]}'s")
                unit = "TOPS" if precision == "int8" else "TFLOP/s"
                base = base or per_second
                line = (f"  {precision} batch {batch} [oneDNN ISA {isa}]: {per_second:.3f} slices/s "
                        f"({per_second / base:.2f}x batch 1), {achieved:.3f} {unit} of peak {peak:.3f}, "
                        f"peak RSS {rss:.0f} MB")
                if batch in (batches[0], batches[-1]):
                    _, _, _, _, _, fewer, short_rss = segment(binary, models[precision], short,
                                                              work / "short-out.h5", batch, threads)
                    line += f" ({short_rss:.0f} MB with {fewer} slices)"
                print(line, flush=True)
                if onnx_count and done:
                    per_slice = multiply_adds / done
                    if abs(per_slice - onnx_count) > 1e-6 * onnx_count:
                        raise SystemExit(f"bench_segment_batch: segment counted {per_slice:.0f} multiply-adds a "
                                         f"slice, ONNX shape inference {onnx_count}")
        print(f"  labels at every batch size equal to batch {batches[0]}'s (per precision)")
        if onnx_count:
            print(f"  multiply-adds per slice: {onnx_count / 1e9:.1f} G, segment's count equal to ONNX shape "
                  f"inference's")


if __name__ == "__main__":
    main()
