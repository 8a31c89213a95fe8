#!/usr/bin/env python3
"""`slicelab listen` under load and faults (issue #35): 4 concurrent storescu senders x 10 series x 40 slices into
the listener, results sent on to Orthanc; every one of the 40 results must arrive exactly once. Reports series per
minute and the listener's resident memory after each quarter of the series (it should stay flat), then runs the
same load while killing the listener with SIGKILL at 5 random moments (seeded), each followed by a restart, and
checks again that all 40 arrive, none twice.

Runs inside a private network namespace (unshare -n, lo up), as the PACS test does; Orthanc is stopped by its PID.
The series are made from one bundled mni-brain slice: each a stack of 40 copies along the slice normal with new
UIDs. Usage: bench_listen.py [--slicelab BINARY] [--seed S] [--skip-kills | --skip-clean]   (the release build by
default)
"""
import argparse
import json
import os
import pathlib
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pydicom
from pydicom.uid import generate_uid

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "Tests/PACS"))
import pacs_test  # noqa: E402  (Orthanc's configuration and REST helpers)

SENDERS, SERIES, SLICES = 4, 10, 40


def make_series(folder):
    """SENDERS folders of SERIES series of SLICES slices each."""
    source = pydicom.dcmread(ROOT / "Sources/SliceLabKit/Resources/Demo/mni-brain/images/axial035.dcm")
    spacing = float(getattr(source, "SliceThickness", 1) or 1)
    senders = []
    for s in range(SENDERS):
        study = generate_uid()
        sender = folder / f"sender{s}"
        for k in range(SERIES):
            series = generate_uid()
            target = sender / f"series{k:02d}"
            target.mkdir(parents=True)
            for z in range(SLICES):
                d = source.copy()
                d.StudyInstanceUID, d.SeriesInstanceUID = study, series
                d.SOPInstanceUID = generate_uid()
                d.file_meta.MediaStorageSOPInstanceUID = d.SOPInstanceUID
                d.InstanceNumber = z + 1
                position = [float(v) for v in source.ImagePositionPatient]
                d.ImagePositionPatient = [position[0], position[1], position[2] + z * spacing]
                d.save_as(target / f"{z:03d}.dcm")
        senders.append(sender)
    return senders


def rss_kib(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_load(slicelab, folder, senders, kills, seed):
    spool = folder / f"spool-{'kills' if kills else 'clean'}"
    log_name = f"listen-{'kills' if kills else 'clean'}.log"
    (folder / f"orthanc-{'kills' if kills else 'clean'}").mkdir()
    orthanc = pacs_test.start_orthanc(folder / f"orthanc-{'kills' if kills else 'clean'}")
    try:
        listener = start(slicelab, folder, spool, log_name)
        start_time = time.time()
        processes = [subprocess.Popen(["storescu", "-aet", "SENDER", "-aec", "SLICELAB", "+sd", "+r", "127.0.0.1",
                                       str(pacs_test.LISTEN_PORT), str(sender)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for sender in senders]
        rng = random.Random(seed)
        kill_times = sorted(rng.uniform(5, 120) for _ in range(kills))
        rss, quarters, killed = [], [SENDERS * SERIES * q // 4 for q in (1, 2, 3, 4)], 0
        total = SENDERS * SERIES
        while True:
            delivered = len(pacs_test.seg_instances())
            while quarters and delivered >= quarters[0]:
                rss.append((quarters.pop(0), rss_kib(listener.pid)))
            if kill_times and time.time() - start_time >= kill_times[0]:
                kill_times.pop(0)
                listener.send_signal(signal.SIGKILL)
                listener.wait()
                killed += 1
                listener = start(slicelab, folder, spool, log_name)
            if delivered >= total and not kill_times and all(p.poll() is not None for p in processes):
                break
            if time.time() - start_time > 3600:
                sys.exit("bench_listen: not every result arrived within an hour")
            time.sleep(0.5)
        seconds = time.time() - start_time
        time.sleep(3)  # anything arriving twice would show now
        instances = pacs_test.seg_instances()
        senders_ok = all(p.returncode == 0 for p in processes)
        pacs_test.stop(listener)
        return {"kills": killed, "seconds": seconds, "series_per_minute": total / seconds * 60,
                "results": len(instances), "expected": total, "senders_ok": senders_ok, "rss_kib": rss}
    finally:
        for listener in pacs_test.LISTENERS:
            pacs_test.stop(listener, kill=True)
        pacs_test.stop(orthanc)


def start(slicelab, folder, spool, log_name):
    return pacs_test.start_listener(slicelab, folder, spool, log_name, caller="SENDER",
                                    options=("--series-idle", "5", "--max-associations", "8"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--slicelab", default=str(ROOT / ".build/release/slicelab"))
    parser.add_argument("--seed", type=int, default=35)
    parser.add_argument("--skip-kills", action="store_true")
    parser.add_argument("--skip-clean", action="store_true", help="only the run with kills")
    args = parser.parse_args()
    if os.environ.get("SLICELAB_PACS_NAMESPACE") != "1":
        if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
            print("bench_listen: skipped: unshare -n is not permitted here")
            return
        env = dict(os.environ, SLICELAB_PACS_NAMESPACE="1")
        sys.exit(subprocess.run(["unshare", "-n", sys.executable, __file__, *sys.argv[1:]], env=env).returncode)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    folder = pathlib.Path(tempfile.mkdtemp(prefix="slicelab-bench-listen-"))
    try:
        senders = make_series(folder)
        cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
        isa = subprocess.run([args.slicelab, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
        results = {"cpu": cpu, "version": isa, "senders": SENDERS, "series_per_sender": SERIES, "slices": SLICES,
                   "seed": args.seed}
        if not args.skip_clean:
            results["clean"] = run_load(args.slicelab, folder, senders, 0, args.seed)
        if not args.skip_kills:
            results["kills"] = run_load(args.slicelab, folder, senders, 5, args.seed)
        out = ROOT / "Benchmarks/output"
        out.mkdir(exist_ok=True)
        (out / "listen.json").write_text(json.dumps(results, indent=1))
        print(json.dumps(results, indent=1))
        for name in ("clean", "kills"):
            if name in results:
                r = results[name]
                assert r["results"] == r["expected"], f"{name}: {r['results']} results at Orthanc, not {r['expected']}"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
