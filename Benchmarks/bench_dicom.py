"""DICOM decoding: SliceLab (`slicelab convert`) against pydicom 3 (+ pylibjpeg) in the same run.

Two workloads, each converted to HDF5 by both (same work: decode every frame, modality LUT or RGB, write):
  1. the conformance corpus (Datasets/cache/dicom-corpus, `make corpus`): every file pydicom decodes,
     copied flat into one folder;
  2. a generated CT series: 300 slices of 512 x 512 int16, rescale -1024 + 1 x value (seed 20261129).
Throughput is MB of decoded frames (rows x columns x samples x frames x BitsAllocated/8) per second of wall
time (and CPU time, user + system, which a loaded machine disturbs less), with inputs and outputs in /dev/shm; peak memory is the child process's maximum resident set size (wait4). Prints SliceLab/pydicom ratios.

Each side runs `--rounds` times (default 3), alternately (SliceLab, pydicom, SliceLab, …), and medians are
compared, so a burst of load on the shared machine does not decide the ratio. pydicom decodes one file after
another on one thread; SliceLab runs twice per round, with SLICELAB_DECODE_THREADS=1 (the same) and =2 (slices of
a series, and JPEG 2000 code blocks, on two threads). CPU time (user + system) is what a loaded machine disturbs
least.

Run: make bench (release build), or .venv/bin/python Benchmarks/bench_dicom.py [--slices N] [--rounds R].
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

from corpus_folders import separate_skipped

ROOT = pathlib.Path(__file__).resolve().parents[1]
CORPUS = ROOT / "Datasets" / "cache" / "dicom-corpus"
GOLDENS = ROOT / "Tests" / "DICOMTests" / "Fixtures" / "dicom_goldens.json"
SEED = 20261129

PEER = r'''
import sys, pathlib, warnings
import numpy as np, h5py, pydicom
from pydicom.pixels import apply_modality_lut, apply_color_lut
warnings.simplefilter("ignore")
folder, out = pathlib.Path(sys.argv[1]), sys.argv[2]
files = sorted(p for p in folder.iterdir() if p.is_file())
datasets = [pydicom.dcmread(p) for p in files]
with h5py.File(out, "w") as h5:
    if sys.argv[3] == "series":
        normal = np.cross(*np.reshape(np.asarray(datasets[0].ImageOrientationPatient, float), (2, 3)))
        datasets.sort(key=lambda d: float(np.dot(np.asarray(d.ImagePositionPatient, float), normal)))
        volume = np.empty((len(datasets), datasets[0].Rows, datasets[0].Columns), np.float32)
        for k, d in enumerate(datasets):
            volume[k] = apply_modality_lut(d.pixel_array, d)
        # The same contract as `slicelab convert`: /series/<uid>/image, and /image a hard link to it (stored once).
        h5[f"series/{datasets[0].SeriesInstanceUID}/image"] = volume
        h5["image"] = h5[f"series/{datasets[0].SeriesInstanceUID}/image"]
    else:
        for k, d in enumerate(datasets):
            array = d.pixel_array
            if d.get("PhotometricInterpretation") == "PALETTE COLOR":
                array = apply_color_lut(array, d)
            elif int(d.get("SamplesPerPixel", 1)) == 1:
                array = apply_modality_lut(array, d).astype(np.float32)
            h5[f"image{k}"] = array
'''


def run(command, environment=None):
    """Wall seconds, peak RSS (MB), stdout and CPU seconds (user + system) of a child process."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, stdout=out, stderr=err,
                                   env=None if environment is None else {**os.environ, **environment})
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        output, error = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if status != 0:
        sys.exit(f"{command[0]} failed ({status}): {error[-2000:]}")
    return elapsed, usage.ru_maxrss / 1024, output, usage.ru_utime + usage.ru_stime


def decoded_megabytes(paths):
    import pydicom
    total = 0
    for path in paths:
        d = pydicom.dcmread(path, stop_before_pixels=True)
        total += (d.Rows * d.Columns * int(d.get("SamplesPerPixel", 1)) * int(d.get("NumberOfFrames", 1) or 1)
                  * max(int(d.BitsAllocated) // 8, 1))
    return total / 1e6


def make_series(folder, slices):
    import numpy as np
    import pydicom
    from pydicom.dataset import FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian

    rng = np.random.default_rng(SEED)
    series_uid = f"1.2.826.0.1.3680043.8.498.{SEED}"
    for k in range(slices):
        ds = pydicom.Dataset()
        ds.file_meta = FileMetaDataset()
        ds.file_meta.TransferSyntaxUID = ExplicitVRLittleEndian
        ds.file_meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.2"
        ds.file_meta.MediaStorageSOPInstanceUID = f"{series_uid}.{k + 1}"
        ds.SOPClassUID = "1.2.840.10008.5.1.4.1.1.2"
        ds.SOPInstanceUID = f"{series_uid}.{k + 1}"
        ds.Modality = "CT"
        ds.SeriesInstanceUID = series_uid
        ds.InstanceNumber = k + 1
        ds.ImagePositionPatient = [0, 0, -1.25 * k]
        ds.ImageOrientationPatient = [1, 0, 0, 0, 1, 0]
        ds.PixelSpacing = [0.7, 0.7]
        ds.Rows = ds.Columns = 512
        ds.SamplesPerPixel = 1
        ds.PhotometricInterpretation = "MONOCHROME2"
        ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 16, 15, 1
        ds.RescaleSlope, ds.RescaleIntercept = 1, -1024
        ds.PixelData = rng.integers(-1024, 3072, (512, 512), dtype=np.int16).tobytes()
        ds.save_as(folder / f"slice{(k * 7919) % slices:04d}.dcm", enforce_file_format=True)


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def compare(name, folder, mode, slicelab, output, rounds):
    """Runs SliceLab on one thread, SliceLab on two (SLICELAB_DECODE_THREADS) and pydicom alternately `rounds` times
    on the same files and prints medians of wall time, CPU time (user + system) and peak RSS, and the ratios.
    pydicom decodes on one thread; `SLICELAB_DECODE_THREADS=1` makes SliceLab do the same.

    `slicelab convert FOLDER` groups files by SeriesInstanceUID and skips a file whose size differs from the rest of
    its series (two corpus files share a series UID with a file of another size). A first SliceLab run finds them;
    each is moved into a folder of its own, and both sides convert every folder, so both decode every file and
    both pay one process start per folder."""
    _, _, printed, _ = run([slicelab, "convert", str(folder), str(output / "slicelab.h5")])
    folders = separate_skipped(folder, printed)
    files = sorted(path for each in folders for path in each.iterdir())
    megabytes = decoded_megabytes(files)
    sides = {"SliceLab 1 thread ": ({"SLICELAB_DECODE_THREADS": "1"}, True),
             "SliceLab 2 threads": ({"SLICELAB_DECODE_THREADS": "2"}, True),
             "pydicom (1 thread)": (None, False)}
    results = {side: [] for side in sides}
    for _ in range(rounds):
        for side, (environment, ours) in sides.items():
            wall = cpu = peak = 0.0
            for each in folders:
                command = ([slicelab, "convert", str(each), str(output / "slicelab.h5")] if ours
                           else [sys.executable, "-c", PEER, str(each), str(output / "pydicom.h5"), mode])
                elapsed, resident, _, used = run(command, environment)
                wall, cpu, peak = wall + elapsed, cpu + used, max(peak, resident)
            results[side].append((wall, cpu, peak))
    print(f"{name}: {megabytes:.1f} MB decoded ({len(files)} files in {len(folders)} folder(s)), median of "
          f"{rounds} interleaved rounds")
    medians = {}
    for side, runs in results.items():
        wall, cpu, peak = (median([r[i] for r in runs]) for i in range(3))
        medians[side] = (wall, cpu, peak)
        print(f"  {side} {wall:7.2f} s wall {cpu:7.2f} s CPU  {megabytes / wall:8.1f} MB/s  peak {peak:7.0f} MB   "
              f"(wall per round: {', '.join(f'{r[0]:.2f}' for r in runs)})")
    peer_wall, peer_cpu, _ = medians["pydicom (1 thread)"]
    for side in ("SliceLab 1 thread ", "SliceLab 2 threads"):
        wall, cpu, _ = medians[side]
        print(f"  throughput ratio {side.strip()}/pydicom: {peer_wall / wall:.2f}x wall, {peer_cpu / cpu:.2f}x CPU")
    print(f"  (load average {os.getloadavg()[0]:.1f})")
    return max(medians["SliceLab 1 thread "][2], medians["SliceLab 2 threads"][2])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--slices", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved runs of each side (medians reported)")
    parser.add_argument("--slicelab", default=str(ROOT / ".build" / "release" / "slicelab"))
    arguments = parser.parse_args()
    if not CORPUS.is_dir():
        sys.exit("the DICOM corpus is missing: run `make corpus`")
    import pydicom
    print(f"peers: pydicom {pydicom.__version__}; seed {SEED}")
    # Inputs and outputs in RAM (/dev/shm where present), so disk writes of the HDF5 files do not drown decoding.
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="bench-dicom-", dir=shm) as temporary:
        temporary = pathlib.Path(temporary)
        corpus = temporary / "corpus"
        corpus.mkdir()
        goldens = json.loads(GOLDENS.read_text())
        ok = [CORPUS / f["file"] for f in goldens["files"] if f["status"] == "ok"]
        for index, path in enumerate(ok):
            shutil.copy(path, corpus / f"{index:03d}_{path.name}")
        compare(f"corpus ({len(ok)} files)", corpus, "corpus", arguments.slicelab, temporary, arguments.rounds)

        series = temporary / "series"
        series.mkdir()
        make_series(series, arguments.slices)
        volume_mb = arguments.slices * 512 * 512 * 4 / 1e6
        peak = compare(f"CT series ({arguments.slices} x 512 x 512)", series, "series", arguments.slicelab,
                       temporary, arguments.rounds)
        print(f"  SliceLab peak / Float32 volume ({volume_mb:.0f} MB): {peak / volume_mb:.2f}")


if __name__ == "__main__":
    main()
