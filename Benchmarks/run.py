"""Runs every Benchmarks/bench_*.py in turn; each measures SliceLab against its peer and prints the ratio."""
import pathlib
import subprocess
import sys

here = pathlib.Path(__file__).resolve().parent
scripts = sorted(here.glob("bench_*.py"))
if not scripts:
    print("no benchmarks yet")
failed = 0
for script in scripts:
    print(f"== {script.name}", flush=True)
    failed += subprocess.call([sys.executable, str(script)], cwd=here.parent) != 0
sys.exit(1 if failed else 0)
