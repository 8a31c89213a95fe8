#!/usr/bin/env python3
"""Executes SliceLab's notebooks headless, top to bottom, and fails on any error.

    .venv/bin/python Notebooks/run_notebooks.py [NOTEBOOK.ipynb …] [--timeout SECONDS] [--strip]

Each notebook runs in a fresh Python kernel (this interpreter's, so `.venv`'s packages) with `Notebooks/` as its
working folder and matplotlib's Agg backend. The executed copies (with outputs) and the figures go to
`Notebooks/output/` (git-ignored); the notebooks in git carry no outputs, and a notebook that does is an error
here (`--strip` removes them in place).

A notebook stopped by `CommandNotAvailable` (the built `slicelab` says a subcommand has not landed yet, or a
bundled file such as the demo model is not in the checkout) is reported as NOT AVAILABLE with the reason; it counts as failed with `--require-all` (or SLICELAB_NOTEBOOKS_STRICT=1).
Exit status: 0 when every notebook passed (or was not available, unless required), 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

NOTEBOOKS = Path(__file__).resolve().parent
OUTPUT = NOTEBOOKS / "output"


def has_outputs(notebook) -> bool:
    return any(cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)
               for cell in notebook.cells)


def strip(path: Path) -> bool:
    """Removes outputs and execution counts in place; returns whether anything changed."""
    notebook = nbformat.read(path, as_version=4)
    if not has_outputs(notebook):
        return False
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.write(notebook, path)
    return True


def kernel_home() -> Path:
    """A private Jupyter data folder whose only kernel is this interpreter, so no kernel installed elsewhere on
    the machine (another Python, another venv) can be picked up instead."""
    home = Path(tempfile.mkdtemp(prefix="slicelab-jupyter-"))
    spec = home / "kernels" / "slicelab-python"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "SliceLab (.venv)", "language": "python"}))
    return home


def execute(path: Path, timeout: int) -> tuple[str, str]:
    """Runs one notebook; returns (status, detail) with status passed, failed or not-available."""
    notebook = nbformat.read(path, as_version=4)
    if has_outputs(notebook):
        return "failed", f"{path.name} is committed with outputs: run `{Path(sys.argv[0]).name} --strip`"
    nbformat.validate(notebook)
    client = NotebookClient(notebook, timeout=timeout, kernel_name="slicelab-python", allow_errors=False,
                            resources={"metadata": {"path": str(NOTEBOOKS)}})
    status, detail = "passed", ""
    try:
        client.execute()
    except CellExecutionError as error:
        if error.ename == "CommandNotAvailable":
            status, detail = "not-available", error.evalue
        else:
            status, detail = "failed", str(error)
    except (CellTimeoutError, DeadKernelError, TimeoutError) as error:
        status, detail = "failed", f"{type(error).__name__}: {error}"
    OUTPUT.mkdir(exist_ok=True)
    nbformat.write(notebook, OUTPUT / path.name)  # the executed copy, with outputs, for reading
    return status, detail


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every Notebooks/*.ipynb")
    parser.add_argument("--timeout", type=int, default=600, help="seconds allowed per cell (default 600)")
    parser.add_argument("--strip", action="store_true", help="strip outputs in place instead of running")
    parser.add_argument("--require-all", action="store_true",
                        default=os.environ.get("SLICELAB_NOTEBOOKS_STRICT") == "1",
                        help="a notebook whose slicelab command is not available counts as failed")
    arguments = parser.parse_args()
    paths = arguments.notebooks or sorted(NOTEBOOKS.glob("*.ipynb"))
    if not paths:
        print("notebooks: no notebooks found", file=sys.stderr)
        return 1
    if arguments.strip:
        for path in paths:
            print(f"{path.name}: {'stripped' if strip(path) else 'clean'}")
        return 0

    os.environ["JUPYTER_PATH"] = str(kernel_home())
    os.environ["JUPYTER_PLATFORM_DIRS"] = "1"
    os.environ["MPLBACKEND"] = "Agg"
    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    counts = {"passed": 0, "failed": 0, "not-available": 0}
    started = time.monotonic()
    for path in paths:
        print(f"notebook {path.name} …", flush=True)
        began = time.monotonic()
        status, detail = execute(path.resolve(), arguments.timeout)
        if status == "not-available" and arguments.require_all:
            status = "failed"
        counts[status] += 1
        print(f"notebook {path.name}: {status.upper()} in {time.monotonic() - began:.1f} s", flush=True)
        if detail:
            detail = re.sub(r"\x1b\[[0-9;]*m", "", detail)  # IPython's colours
            print("  " + detail.replace("\n", "\n  "), flush=True)
    print(f"notebooks run in {time.monotonic() - started:.1f} s; executed copies and figures in "
          f"{OUTPUT.relative_to(NOTEBOOKS.parent)}/")
    if counts["not-available"]:
        print(f"{counts['not-available']} notebook(s) NOT AVAILABLE: a slicelab command or bundled file they need is "
              "not in this checkout yet (see above)")
    if counts["passed"] + counts["failed"] == 0:
        print(f"notebooks: none executed ({counts['not-available']} not available in this build)")
    else:
        skipped = f", {counts['not-available']} skipped" if counts["not-available"] else ""
        print(f"notebooks: {counts['passed']} passed, {counts['failed']} failed{skipped}")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
