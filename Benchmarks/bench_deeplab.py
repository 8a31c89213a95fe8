"""DeepLabV3 inference benchmark: SliceLab (oneDNN) against PyTorch (torchvision, eval, inference_mode) and ONNX
Runtime on the same model and input, same threads, batch 1, in the same run.

Cases (issue #4): deeplabv3_resnet50 3x512x512 with 21 classes (the headline), deeplabv3_resnet101 and
deeplabv3_mobilenet_v2 at 512x512, deeplabv3_resnet18 1x256x256 with 4 classes. torchvision's initial weights are
saved as safetensors and loaded by `slicelab segment --weights` (the parity entry point); SliceLab's latencies come
from SLICELAB_PARITY_REPEAT (warm forwards inside one process, input to upsampled logits), PyTorch's and ONNX
Runtime's from the same number of warm runs. The three run in turn for several rounds (BENCH_ROUNDS, default 3;
each a fresh process per engine), so that load from other tenants of a shared machine falls on all of them
alike; a ratio is the median of the rounds' ratios of medians. Peak RSS is each process's maximum resident set. GFLOP/s counts the
multiply-adds of every convolution (2 FLOPs each) over the median latency.

Needs torch, torchvision, safetensors, h5py (and onnxruntime + onnx export for the ONNX peer); run with
    /work/goldens-venv/bin/python Benchmarks/bench_deeplab.py
after `swift build -c release` (`make bench` does both). BENCH_QUICK=1 runs only the ResNet-50 case with fewer repeats.
First (BENCH_INT8=0 skips them) the precision cases of `bench_deeplab_int8.py`: SliceLab fp32 and int8 against ONNX
Runtime fp32 and int8 (static QDQ, per-channel) and OpenVINO, which need no torch.
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[1]
QUICK = os.environ.get("BENCH_QUICK") == "1"
REPEATS = 3 if QUICK else 5
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
THREADS = int(os.environ.get("BENCH_THREADS", "2"))


def machine_peak_gflops():
    """Cores used x 2 FMA units x float32 lanes (16 with AVX-512, else 8) x 2 FLOPs x the clock /proc/cpuinfo reports."""
    text = pathlib.Path("/proc/cpuinfo").read_text()
    lanes = 16 if " avx512f" in text else 8
    mhz = [float(l.split(":")[1]) for l in text.splitlines() if l.startswith("cpu MHz")]
    return THREADS * 2 * lanes * 2 * (max(mhz) / 1000 if mhz else 2.0), "AVX-512" if lanes == 16 else "AVX2"


PEAK_GFLOPS, ISA = machine_peak_gflops()

if __name__ == "__main__" and os.environ.get("BENCH_INT8", "1") == "1":
    # The precision cases (issue #19) need only numpy, h5py, onnxruntime and openvino (no torch).
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    import bench_deeplab_int8  # noqa: E402

    bench_deeplab_int8.main(THREADS, REPEATS, ROUNDS, QUICK)

try:
    import h5py
    import numpy as np
    import safetensors.torch
    import torch
    import torchvision
except ImportError as error:
    print(f"bench_deeplab: skipped, peer missing ({error}); run with /work/goldens-venv/bin/python")
    sys.exit(0)

sys.path.insert(0, str(ROOT / "Datasets/goldens"))
from deeplab_goldens import build  # noqa: E402  (the same torchvision compositions as the parity fixtures)

CASES = [("deeplabv3_resnet50", 21, 3, 512)]
if not QUICK:
    CASES += [("deeplabv3_resnet101", 21, 3, 512), ("deeplabv3_mobilenet_v2", 21, 3, 512),
              ("deeplabv3_resnet18", 4, 1, 256)]


def conv_flops(model, x):
    total = [0]

    def hook(module, inputs, output):
        k = module.kernel_size[0] * module.kernel_size[1]
        total[0] += 2 * output.numel() * module.in_channels // module.groups * k

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    with torch.inference_mode():
        model(x)
    for h in handles:
        h.remove()
    return total[0]


PEER = r"""
import json, resource, sys, time, numpy as np, torch
kind, path, threads, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
x = np.load(path + ".npy")
times = []
if kind == "torch":
    torch.set_num_threads(threads)
    model = torch.load(path + ".pt", weights_only=False).eval()
    t = torch.from_numpy(x)
    with torch.inference_mode():
        model(t)
        for _ in range(repeats):
            s = time.perf_counter(); model(t); times.append((time.perf_counter() - s) * 1e3)
else:
    import onnxruntime as ort
    o = ort.SessionOptions(); o.intra_op_num_threads = threads; o.inter_op_num_threads = 1
    session = ort.InferenceSession(path + ".onnx", o, providers=["CPUExecutionProvider"])
    session.run(None, {"image": x})
    for _ in range(repeats):
        s = time.perf_counter(); session.run(None, {"image": x}); times.append((time.perf_counter() - s) * 1e3)
hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({"times": times, "rss_mb": int(hwm.split()[1]) / 1024}))
"""


def run_peer(kind, path):
    result = subprocess.run([sys.executable, "-c", PEER, kind, path, str(THREADS), str(REPEATS)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        return None, result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "failed"
    return json.loads(result.stdout.strip().splitlines()[-1]), None


def run_slicelab(binary, arch, k, c, weights, image_path, out_path):
    env = dict(os.environ, SLICELAB_PARITY_REPEAT=str(REPEATS), OMP_NUM_THREADS=str(THREADS))
    process = subprocess.Popen([binary, "segment", "--weights", weights, "--arch", arch, "--num-classes", str(k),
                                "--in-channels", str(c), "--raw-input", image_path, "--logits", out_path,
                                "--threads", str(THREADS)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env)
    peak_kb = 0
    while process.poll() is None:  # VmHWM is the process's own high-water mark (not inherited from us)
        try:
            with open(f"/proc/{process.pid}/status") as status:
                hwm = next((l for l in status if l.startswith("VmHWM")), None)
            if hwm:
                peak_kb = max(peak_kb, int(hwm.split()[1]))
        except OSError:
            pass
        time.sleep(0.05)
    _, stderr = process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"slicelab failed: {stderr}")
    line = next(l for l in stderr.splitlines() if l.startswith("latencies_ms"))
    return [float(v) for v in line.split()[1:]], peak_kb / 1024


def median(values):
    return sorted(values)[len(values) // 2]


def main():
    binary = ROOT / ".build/release/slicelab"
    if not binary.exists():
        raise SystemExit("bench_deeplab: build first: swift build -c release")
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, threads {THREADS}, repeats {REPEATS}, "
          f"machine peak ~{PEAK_GFLOPS:.0f} GFLOP/s ({ISA})")
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as work:
        for arch, k, c, size in CASES:
            model = build(arch, k, c, 8, [12, 24, 36], 256, False, 1.0).eval()
            x = torch.rand(1, c, size, size)
            flops = conv_flops(model, x)
            base = os.path.join(work, arch)
            safetensors.torch.save_file({n: t.contiguous() for n, t in model.state_dict().items()}, base + ".safetensors")
            np.save(base + ".npy", x.numpy())
            torch.save(model, base + ".pt")
            with h5py.File(base + "_in.h5", "w") as f:
                f["image"] = x.numpy()
            onnx_error = None
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    torch.onnx.export(model, x, base + ".onnx", input_names=["image"], output_names=["out"],
                                      dynamo=False)
            except Exception as error:  # the exporter needs the onnx package
                onnx_error = f"{type(error).__name__}: {error}"[:120]
            latencies = {"slicelab": [], "torch": [], "onnx": []}  # each engine's median latency per round
            rss, failures = {}, ({"onnx": onnx_error} if onnx_error else {})
            for _ in range(ROUNDS):
                ours, peak = run_slicelab(str(binary), arch, k, c, base + ".safetensors", base + "_in.h5",
                                          base + "_out.h5")
                rss["slicelab"] = max(peak, rss.get("slicelab", 0))
                latencies["slicelab"].append(median(ours))
                for kind in ("torch", "onnx"):
                    if kind not in failures:
                        result, failures[kind] = run_peer(kind, base)
                        if result:
                            del failures[kind]
                            latencies[kind].append(median(result["times"]))
                            rss[kind] = max(result["rss_mb"], rss.get(kind, 0))
            with h5py.File(base + "_out.h5") as f:
                logits = f["logits"][:]
            with torch.inference_mode():
                expected = model(x)["out"].numpy()
            error = float(np.abs(logits - expected).max() / np.abs(expected).max())
            t_ours = median(latencies["slicelab"])
            print(f"{arch} {c}x{size}x{size} K={k}: {flops / 1e9:.1f} GFLOP, max|Δ|/max|logit| {error:.1e}, "
                  f"{ROUNDS} rounds of {REPEATS}")
            print(f"  {'SliceLab':12} median {t_ours:8.1f} ms  {flops / t_ours / 1e6:6.1f} GFLOP/s "
                  f"(machine peak ~{PEAK_GFLOPS:.0f})  peak RSS {rss['slicelab']:7.0f} MB")
            for kind, name in (("torch", "PyTorch"), ("onnx", "ONNX Runtime")):
                if kind in failures:
                    print(f"  {name:12} not measured: {failures[kind]}")
                    continue
                t = median(latencies[kind])
                ratios = [a / b for a, b in zip(latencies["slicelab"], latencies[kind])]
                print(f"  {name:12} median {t:8.1f} ms  {flops / t / 1e6:6.1f} GFLOP/s  peak RSS {rss[kind]:7.0f} MB"
                      f"  ratio SliceLab/{name} {median(ratios):.2f} (rounds: {', '.join(f'{q:.2f}' for q in ratios)})")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
