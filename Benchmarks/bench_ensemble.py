"""An ensemble of 5 members with 4-view mirroring on a volume against one member without (issue #37's "20 passes'
work", goal <= 12 x): `slicelab segment VOLUME --model m1.h5 ... --model m5.h5 --tta mirror` against
`segment VOLUME --model m1.h5 --tta none`, whole jobs in fresh processes under `/usr/bin/time`, alternated, with
whole slices (`--tile-size 0`) and with the default tiles (the training crop, as nnU-Net predicts).

The members are five copies of the bundled `mni-brain-3d` whose recorded training configuration is edited to say
that up-down flips were trained as well (the bundled model was trained with left-right flips only, so mirroring
would take 2 views, not 4): the weights are untouched, which changes the labels but not the work, the only thing
measured here. The volume is BENCH_VOLUME (default: the bundled 20-slice slab `mnib3d_031`); BENCH_ROUNDS rounds
(default 3), BENCH_THREADS threads (default 2). The ratio is the median of the rounds' ratios of wall times; peak
RSS is printed for both.

Run: `.venv/bin/python Benchmarks/bench_ensemble.py` after `swift build -c release`.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_deeplab_int8 import isa_and_peaks, median  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEMO = ROOT / "Sources/SliceLabKit/Resources/Demo"


def members(folder):
    """Five copies of the bundled 3-D model recording up-down and left-right flips."""
    import h5py
    paths = []
    for i in range(1, 6):
        path = folder / f"m{i}.h5"
        shutil.copy(DEMO / "models/mni-brain-3d.h5", path)
        with h5py.File(path, "r+") as f:
            configuration = json.loads(f.attrs["training_configuration"])
            configuration["augmentation"]["verticalFlipProbability"] = 0.5
            configuration["augmentation"]["horizontalFlipProbability"] = 0.5
            f.attrs["training_configuration"] = json.dumps(configuration)
        paths.append(str(path))
    return paths


def timed(command):
    """Wall seconds and peak RSS (MB) of `command` under /usr/bin/time."""
    result = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"bench_ensemble: {' '.join(command)} failed: {result.stderr.strip()[-300:]}")
    seconds, kilobytes = result.stderr.strip().splitlines()[-1].split()
    return float(seconds), int(kilobytes) / 1024


def main():
    binary = pathlib.Path(os.environ.get("SLICELAB_BINARY", ROOT / ".build/release/slicelab"))
    if not binary.exists():
        raise SystemExit("bench_ensemble: build first: swift build -c release")
    volume = os.environ.get("BENCH_VOLUME", str(DEMO / "mni-brain-3d/imagesTs/mnib3d_031_0000.nii.gz"))
    rounds = int(os.environ.get("BENCH_ROUNDS", "3"))
    threads = os.environ.get("BENCH_THREADS", "2")
    isa, _, _ = isa_and_peaks(binary, int(threads))
    print(f"ensemble: {volume}, 5 members x 4 views against one member, {rounds} rounds, {threads} threads, "
          f"oneDNN ISA {isa}")
    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)
        models = members(work)
        for mode, tiles in (("whole slices", ["--tile-size", "0"]), ("default tiles", [])):
            common = [str(binary), "segment", volume, "--threads", threads] + tiles
            ensemble = common + sum((["--model", m] for m in models), []) + [
                "--tta", "mirror", "--out", str(work / "ensemble.nii.gz")]
            single = common + ["--model", models[0], "--tta", "none", "--out", str(work / "one.nii.gz")]
            runs = {"ensemble": [], "one": []}
            for _ in range(rounds):
                runs["ensemble"].append(timed(ensemble))
                runs["one"].append(timed(single))
            ratios = [e[0] / o[0] for e, o in zip(runs["ensemble"], runs["one"])]
            print(f"  {mode}: ensemble {median([r[0] for r in runs['ensemble']]):.2f} s "
                  f"(peak RSS {max(r[1] for r in runs['ensemble']):.0f} MB), one member "
                  f"{median([r[0] for r in runs['one']]):.2f} s ({max(r[1] for r in runs['one']):.0f} MB): "
                  f"ratio {median(ratios):.1f} x (rounds {', '.join(f'{r:.1f}' for r in ratios)}; goal 12 x) "
                  f"on {isa}")


if __name__ == "__main__":
    main()
