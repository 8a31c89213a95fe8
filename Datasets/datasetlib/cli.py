"""The command line shared by the set builders: --out, --seed, --wheels, --previews."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Callable

from .labeledset import SetSpec, build_set, versions
from .preview import render
from .template import load_template

DATASETS = Path(__file__).resolve().parent.parent


def builder_main(argv, doc: str, name: str, default_seed: int, spec: Callable[[int], SetSpec]) -> int:
    """Builds the set, prints its statistics as JSON and renders 4 train and 4 test previews."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DATASETS / "cache" / name)
    parser.add_argument("--seed", type=int, default=default_seed)
    parser.add_argument("--wheels", type=Path, default=DATASETS / "cache" / "wheels")
    parser.add_argument("--previews", default=str(DATASETS / "cache" / "previews"),
                        help="folder for a few rendered image|overlay PNGs ('' for none)")
    args = parser.parse_args(argv)
    template = load_template(args.wheels)
    stats = build_set(spec(args.seed), template, args.out, versions())
    print(json.dumps(stats, indent=2))
    if args.previews:
        previews = Path(args.previews) / args.out.name
        splits = json.loads((args.out / "dataset.json").read_text())["splits"]
        for split in ("train", "test"):
            cases = splits[split]
            for case in dict.fromkeys(cases[len(cases) * i // 5] for i in range(1, 5)):
                render(args.out, case, previews / f"{split}-{case}.png")
        print(f"previews in {previews}")
    return 0
