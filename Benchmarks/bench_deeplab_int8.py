"""DeepLabV3 precision benchmark (issue #19): SliceLab fp32 and int8 against ONNX Runtime fp32 and int8 and OpenVINO,
same model, same input, same threads, batch 1, in the same run. Run by bench_deeplab.py (or alone:
`.venv/bin/python Benchmarks/bench_deeplab_int8.py`, after `swift build -c release`).

Cases:
- `resnet50`: DeepLabV3-ResNet-50, 512 x 512, 21 classes. Its float32 checkpoint is made by `slicelab train` (2 steps
  on a generated set of 512 x 512 RGB images, seed 1; the weights are not a trained model, only the speed means
  something), calibrated on 8 of the set's images. `train` makes a 1-channel model of it by default, so the input is
  1 x 512 x 512, not the issue's 3 x 512 x 512 (a difference in the first convolution only).
- `mni-brain`: the bundled DeepLabV3-MobileNetV2 mni-brain model (1 x 233 x 197, input scale 4), calibrated on the
  bundled set's 4 training slices: a real trained model, so the int8 engines' agreement with fp32 means something.

SliceLab int8 comes from `slicelab quantize` (its default method); `--calibration-inputs` writes the calibration
slices exactly as the network saw them, and ONNX Runtime's `quantize_static` (QDQ, per-channel, u8 activations,
s8 weights, MinMax calibration) calibrates on those same slices of the ONNX file `slicelab export` writes.
OpenVINO runs that ONNX file with INFERENCE_PRECISION_HINT set explicitly (f32; bf16 where the CPU has it), and
"OpenVINO int8" runs the same QDQ file ONNX Runtime int8 runs (its low-precision transformations execute the
quantised convolutions in int8; the f32 hint keeps what stays float in f32).
Each engine runs in a fresh process per round (BENCH_ROUNDS, default 3); a ratio is the median of the rounds' ratios
of median latencies; the 1-minute load average is printed at each round's start. BENCH_BASELINE_BINARY=PATH adds
"SliceLab fp32 base" and "SliceLab int8 base": another slicelab build (e.g. main's, before a change) on the same
checkpoints, alternated with the others in the same run. "TOPS" counts the convolutions' multiply-adds on taps inside the input x 2 over the
median latency (the same count for every engine; the count with padding taps is printed too), next to the ISA's
peak for 2 threads at the busy core's clock measured by `cpu_clock.c`. It is a direct convolution's count: an engine
that does fewer products (SliceLab's Winograd layers: 2.25-fold fewer in their part with F(2×2, 3×3), 4-fold with F(4×4)) is credited with the direct
count, so its figure is an effective rate and can exceed what the multiply units do.
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]

PEER = r"""
import json, sys, time, numpy as np
kind, model, inputs, threads, repeats = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
x = np.load(inputs)
times = []
if kind.startswith("ort"):
    import onnxruntime as ort
    o = ort.SessionOptions(); o.intra_op_num_threads = threads; o.inter_op_num_threads = 1
    session = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    run = lambda: session.run(None, {name: x})[0]
else:
    import openvino as ov
    core = ov.Core()
    hint = kind.split(":")[1]
    compiled = core.compile_model(core.read_model(model), "CPU", {"INFERENCE_PRECISION_HINT": hint,
                                  "INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1,
                                  "PERFORMANCE_HINT": "LATENCY"})
    request = compiled.create_infer_request()
    run = lambda: request.infer({0: x})[compiled.output(0)]
out = run()
for _ in range(repeats):
    s = time.perf_counter(); out = run(); times.append((time.perf_counter() - s) * 1e3)
np.save(inputs + "." + kind.replace(":", "_") + ".out.npy", out)
hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({"times": times, "rss_mb": int(hwm.split()[1]) / 1024}))
"""


def median(values):
    return sorted(values)[len(values) // 2]


def clock_ghz():
    """The busy core's clock measured by `cpu_clock.c` (best of 3; compiled with cc), else /proc/cpuinfo's
    "cpu MHz" (in a VM the nominal clock, below the boosted one), and which of the two it is."""
    with tempfile.TemporaryDirectory() as folder:
        probe = pathlib.Path(folder) / "cpu_clock"
        try:
            subprocess.run(["cc", "-O1", "-o", str(probe), str(ROOT / "Benchmarks/cpu_clock.c")],
                           capture_output=True, check=True)
            runs = [subprocess.run([str(probe)], capture_output=True, text=True, check=True) for _ in range(3)]
            return max(float(r.stdout) for r in runs), "measured"
        except (OSError, ValueError, subprocess.CalledProcessError):
            pass  # no C compiler, not x86-64: the reported clock
    info = pathlib.Path("/proc/cpuinfo").read_text()
    mhz = [float(l.split(":")[1]) for l in info.splitlines() if l.startswith("cpu MHz")]
    return (max(mhz) / 1000 if mhz else 2.0), "/proc/cpuinfo"


def onednn_isa(binary):
    """oneDNN's effective ISA as `slicelab --version` names it."""
    text = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout
    return next((l.split(":", 1)[1].strip() for l in text.splitlines() if l.startswith("oneDNN ISA")), "unknown")


def isa_and_peaks(binary, threads):
    """`onednn_isa`, and peak multiply-adds per second (f32, int8) at the clock `clock_ghz` finds (printed)."""
    isa = onednn_isa(binary)
    ghz, source = clock_ghz()
    print(f"clock {ghz:.2f} GHz ({source})")
    # Per cycle per core, as `segment --timings` counts them (SliceLabKit's ComputePeak): f32 FMAs (2 units x
    # lanes); int8 without VNNI vpmaddubsw + vpmaddwd on the two multiply pipes, 32 (AVX2) or 64 (AVX-512);
    # VNNI vpdpbusd 2 x 32 (AVX2-VNNI) or 2 x 64 (AVX-512); AMX 1024.
    if "AMX" in isa:
        f32, int8 = 32, 1024
    elif "512" in isa:
        f32, int8 = 32, 128 if ("VNNI" in isa or "BF16" in isa) else 64
    else:
        f32, int8 = 16, 64 if "VNNI" in isa else 32
    return isa, threads * f32 * ghz * 1e9, threads * int8 * ghz * 1e9


def conv_multiply_adds(onnx_path, shape, inside_only=False):
    """Every Conv node's multiply-adds for an input of `shape`, from ONNX shape inference: every window's
    (`inside_only=False`, what `segment --timings` counts) or only the taps that read inside the input (the
    necessary work: an engine that skips padding taps, as SliceLab's padding-free rectangles do, is measured
    against what it must compute, not against work it leaves out)."""
    import onnx
    from onnx import helper, shape_inference
    model = onnx.load(onnx_path)
    graph_input = model.graph.input[0]
    for d, v in zip(graph_input.type.tensor_type.shape.dim, shape):
        d.ClearField("dim_param")
        d.dim_value = v
    model = shape_inference.infer_shapes(model)
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(model.graph.value_info) + list(model.graph.output) + list(model.graph.input)}
    weights = {t.name: list(t.dims) for t in model.graph.initializer}

    def taps(extent, outputs, kernel, stride, pad, dilation):
        """(output, tap) pairs along one axis whose input position lies inside 0..<extent."""
        return sum(1 for o in range(outputs) for k in range(kernel) if 0 <= o * stride - pad + k * dilation < extent)

    total = 0
    for node in model.graph.node:
        if node.op_type != "Conv" or node.output[0] not in shapes:
            continue
        out, w = shapes[node.output[0]], weights.get(node.input[1])
        if not w or 0 in out:
            continue
        if not inside_only or node.input[0] not in shapes:
            total += int(__import__("numpy").prod(out)) * w[1] * w[2] * w[3]
            continue
        a = {attribute.name: helper.get_attribute_value(attribute) for attribute in node.attribute}
        strides, dilations = a.get("strides", [1, 1]), a.get("dilations", [1, 1])
        pads = a.get("pads", [0, 0, 0, 0])
        x = shapes[node.input[0]]
        total += out[0] * out[1] * w[1] * taps(x[2], out[2], w[2], strides[0], pads[0], dilations[0]) \
            * taps(x[3], out[3], w[3], strides[1], pads[1], dilations[1])
    return total


def run_slicelab(binary, model, raw_input, out, threads, repeats, precision=None):
    env = dict(os.environ, SLICELAB_PARITY_REPEAT=str(repeats), OMP_NUM_THREADS=str(threads))
    extra = ["--precision", precision] if precision else []
    result = subprocess.run([str(binary), "segment", "--model", model, "--raw-input", raw_input, "--logits", out,
                             "--threads", str(threads)] + extra, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise SystemExit(f"slicelab failed: {result.stderr}")
    line = next(l for l in result.stderr.splitlines() if l.startswith("latencies_ms"))
    return [float(v) for v in line.split()[1:]]


def run_peer(kind, model, inputs, threads, repeats):
    result = subprocess.run([sys.executable, "-c", PEER, kind, model, inputs, str(threads), str(repeats)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        return None, (result.stderr.strip().splitlines() or ["failed"])[-1][:160]
    return json.loads(result.stdout.strip().splitlines()[-1]), None


def make_resnet50(binary, work, threads):
    """A float32 DeepLabV3-ResNet-50 checkpoint (2 training steps on a generated RGB set) and that set."""
    import numpy as np
    from PIL import Image
    root = work / "rgb-set"
    for sub in ("images", "labels"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    generator = np.random.default_rng(1)
    names = []
    for i in range(8):
        yy, xx = np.mgrid[0:512, 0:512]
        label = ((xx // 128 + yy // 128 + i) % 21).astype(np.uint8)
        image = (label[..., None] * np.array([11, 7, 5]) + generator.normal(0, 12, (512, 512, 3))).clip(0, 255)
        Image.fromarray(image.astype(np.uint8)).save(root / "images" / f"c{i}.png")
        Image.fromarray(label).save(root / "labels" / f"c{i}.png")
        names.append(f"c{i}")
    (root / "dataset.json").write_text(json.dumps({
        "name": "rgb-set", "classes": [f"class{k}" for k in range(21)], "modality": "OT",
        "splits": {"train": names, "val": [], "test": []}, "preprocessing": {"normalize": "zscore"}}))
    checkpoint = work / "resnet50.h5"
    subprocess.run([str(binary), "train", str(root), "--arch", "deeplabv3_resnet50", "--num-classes", "21",
                    "--steps", "2", "--batch", "2", "--crop", "64", "--seed", "1", "--threads", str(threads),
                    # torchvision's DeepLabV3-ResNet-50 (output stride 8, full resolution), not `train`'s plan.
                    "--output-stride", "8", "--input-scale", "1",
                    "--out", str(checkpoint)], check=True, capture_output=True)
    return checkpoint, root


def quantize_ort(fp32_onnx, int8_onnx, slices):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter(slices)

        def get_next(self):
            x = next(self.items, None)
            return None if x is None else {"image": x}

    quantize_static(str(fp32_onnx), str(int8_onnx), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)


def main(threads=2, repeats=5, rounds=3, quick=False):
    try:
        import h5py
        import numpy as np
        import onnxruntime
        import openvino
    except ImportError as error:
        print(f"bench_deeplab_int8: skipped, peer missing ({error}); run with .venv/bin/python")
        return
    binary = pathlib.Path(os.environ.get("SLICELAB_BINARY", ROOT / ".build/release/slicelab"))
    if not binary.exists():
        raise SystemExit("bench_deeplab_int8: build first: swift build -c release")
    baseline = os.environ.get("BENCH_BASELINE_BINARY")
    isa, peak_f32, peak_int8 = isa_and_peaks(binary, threads)
    print(f"precision cases: onnxruntime {onnxruntime.__version__}, openvino {openvino.__version__}, threads "
          f"{threads}, oneDNN ISA {isa}; peaks for {threads} threads: f32 {2 * peak_f32 / 1e12:.2f} TFLOP/s, "
          f"int8 {2 * peak_int8 / 1e12:.2f} TOPS")
    demo = ROOT / "Sources/SliceLabKit/Resources/Demo"
    with tempfile.TemporaryDirectory() as folder:
        work = pathlib.Path(folder)
        cases = [("mni-brain", lambda: (demo / "models/mni-brain.h5", demo / "mni-brain"))]
        if not quick or "resnet50" in os.environ.get("BENCH_INT8_CASES", ""):
            cases.insert(0, ("resnet50", lambda: make_resnet50(binary, work, threads)))
        only = os.environ.get("BENCH_INT8_CASES")  # e.g. "resnet50"
        for name, make in cases:
            if only and name not in only.split(","):
                continue
            checkpoint, dataset = make()
            base = work / name
            int8 = f"{base}-int8.h5"
            subprocess.run([str(binary), "quantize", str(checkpoint), "--calibrate", str(dataset), "--out", int8,
                            "--calibration-inputs", f"{base}-calibration.h5", "--threads", str(threads)],
                           check=True, capture_output=True)
            subprocess.run([str(binary), "export", str(checkpoint), "--format", "onnx", "--out", f"{base}.onnx"],
                           check=True, capture_output=True)
            with h5py.File(f"{base}-calibration.h5") as f:
                slices = [f["calibration"][k][:] for k in sorted(f["calibration"])]
            quantize_ort(f"{base}.onnx", f"{base}-int8.onnx", slices)
            x = slices[0]
            np.save(f"{base}-input.npy", x)
            with h5py.File(f"{base}-input.h5", "w") as f:
                f["image"] = x
            multiply_adds = conv_multiply_adds(f"{base}.onnx", list(x.shape), inside_only=True)
            every_window = conv_multiply_adds(f"{base}.onnx", list(x.shape))
            engines = {
                "SliceLab fp32": lambda: run_slicelab(binary, str(checkpoint), f"{base}-input.h5", f"{base}-f.h5",
                                                      threads, repeats),
                "SliceLab int8": lambda: run_slicelab(binary, int8, f"{base}-input.h5", f"{base}-q.h5", threads,
                                                      repeats),
                "ORT fp32": ("ort-fp32", f"{base}.onnx"),
                "ORT int8": ("ort-int8", f"{base}-int8.onnx"),
                "OpenVINO f32": ("ov:f32", f"{base}.onnx"),
                # OpenVINO's low-precision transformations run the QDQ graph's convolutions in int8 themselves;
                # the f32 hint only keeps the remaining float parts in f32 (bf16 on AMX otherwise).
                "OpenVINO int8": ("ovq:f32", f"{base}-int8.onnx"),
            }
            if baseline:
                # Another build (before a change) on the same checkpoints, alternated in this run.
                engines["SliceLab fp32 base"] = lambda: run_slicelab(baseline, str(checkpoint), f"{base}-input.h5",
                                                                     f"{base}-c.h5", threads, repeats)
                engines["SliceLab int8 base"] = lambda: run_slicelab(baseline, int8, f"{base}-input.h5",
                                                                     f"{base}-b.h5", threads, repeats)
            if "AMX" in isa or "BF16" in isa:  # SliceLab refuses bf16 below AVX512_CORE_BF16 (issue #40)
                engines["OpenVINO bf16"] = ("ov:bf16", f"{base}.onnx")
                engines["SliceLab bf16"] = lambda: run_slicelab(binary, str(checkpoint), f"{base}-input.h5",
                                                                f"{base}-h.h5", threads, repeats, "bf16")
            latencies = {e: [] for e in engines}
            failures = {}
            loads = []
            for _ in range(rounds):
                loads.append(os.getloadavg()[0])
                for engine, how in engines.items():
                    if engine in failures:
                        continue
                    if callable(how):
                        latencies[engine].append(median(how()))
                    else:
                        result, error = run_peer(how[0], how[1], f"{base}-input.npy", threads, repeats)
                        if error:
                            failures[engine] = error
                        else:
                            latencies[engine].append(median(result["times"]))
            with h5py.File(f"{base}-f.h5") as f:
                reference = f["logits"][:]
            outputs = {}
            for engine, suffix in (("SliceLab int8", "q"), ("SliceLab bf16", "h")):
                if engine in engines:
                    with h5py.File(f"{base}-{suffix}.h5") as f:
                        outputs[engine] = f["logits"][:]
            for engine, kind in (("ORT fp32", "ort-fp32"), ("ORT int8", "ort-int8"), ("OpenVINO f32", "ov_f32"),
                                 ("OpenVINO int8", "ovq_f32"), ("OpenVINO bf16", "ov_bf16")):
                path = pathlib.Path(f"{base}-input.npy.{kind.replace(':', '_')}.out.npy")
                if path.exists():
                    outputs[engine] = np.load(path)
            print(f"{name} {list(x.shape)}: {multiply_adds / 1e9:.1f} G multiply-adds on taps inside the input "
                  f"({every_window / 1e9:.1f} G with padding taps), {rounds} rounds of {repeats}, "
                  f"calibration {len(slices)} slices; 1-minute load average at each round's start: "
                  f"{', '.join(f'{v:.2f}' for v in loads)}")
            labels = reference.argmax(1)
            for engine in engines:
                if engine in failures:
                    print(f"  {engine:18} not measured: {failures[engine]}")
                    continue
                t = median(latencies[engine])
                ops = 2 * multiply_adds / (t / 1e3)
                peak = 2 * (peak_int8 if "int8" in engine else peak_f32)
                line = f"  {engine:18} median {t:8.1f} ms  {ops / 1e12:5.2f} T(FL)OP/s of peak {peak / 1e12:5.2f}"
                if engine in outputs and outputs[engine] is not None and outputs[engine].shape == reference.shape:
                    agreement = float((outputs[engine].argmax(1) == labels).mean())
                    line += f"  labels = SliceLab fp32 on {100 * agreement:6.2f} %"
                print(line)
            for ours, peer in (("SliceLab int8", "ORT int8"), ("SliceLab int8", "OpenVINO int8"),
                               ("SliceLab int8", "SliceLab int8 base"), ("SliceLab int8 base", "ORT int8"),
                               ("SliceLab fp32", "ORT fp32"), ("SliceLab fp32", "SliceLab fp32 base"),
                               ("SliceLab fp32 base", "ORT fp32"),
                               ("SliceLab int8", "SliceLab fp32"), ("SliceLab fp32", "OpenVINO f32"),
                               ("SliceLab bf16", "OpenVINO bf16"), ("SliceLab bf16", "SliceLab fp32"),
                               ("OpenVINO bf16", "OpenVINO f32")):
                if ours in failures or peer in failures or peer not in engines or ours not in engines:
                    continue
                ratios = [a / b for a, b in zip(latencies[ours], latencies[peer])]
                print(f"  ratio {ours} / {peer}: {median(ratios):.2f} (rounds: "
                      f"{', '.join(f'{r:.2f}' for r in ratios)}) on {isa}")
            sys.stdout.flush()


if __name__ == "__main__":
    main(int(os.environ.get("BENCH_THREADS", "2")), 3 if os.environ.get("BENCH_QUICK") == "1" else 5,
         int(os.environ.get("BENCH_ROUNDS", "3")), os.environ.get("BENCH_QUICK") == "1")
