#!/usr/bin/env python3
"""How hard is a built set's test split? Trains a small U-Net (PyTorch, CPU, 128-pixel crops) on the train split for a
fixed number of steps, with and without acquisition augmentation (gamma, smooth bias field, blur, Rician-like noise),
and prints per-class mean Dice on val and test. A calibration probe for the set's design, not a SliceLab
model: SliceLab's own numbers come from `slicelab train` / `compare`.

    /work/goldens-venv/bin/python Datasets/probe_learnability.py Datasets/cache/mni-brain [--steps 1500]
        [--augmentation both|off|on] [--threads 1] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from datasetlib.preview import read_case  # noqa: E402


CROP = 128     # training crops (pixels); evaluation runs on whole slices


def normalise(image: np.ndarray) -> np.ndarray:
    low, high = np.percentile(image, [0.5, 99.5])
    return np.clip((image - low) / max(high - low, 1e-9), 0, 1).astype(np.float32)


def load(folder: Path, cases: list[str]) -> tuple[np.ndarray, np.ndarray]:
    pairs = [read_case(folder, case)[:2] for case in cases]
    rows = max(p[0].shape[0] for p in pairs) + 15 & ~15
    cols = max(p[0].shape[1] for p in pairs) + 15 & ~15
    images = np.zeros((len(pairs), 1, rows, cols), np.float32)
    labels = np.zeros((len(pairs), rows, cols), np.int64)
    for i, (image, label) in enumerate(pairs):
        images[i, 0, :image.shape[0], :image.shape[1]] = normalise(image)
        labels[i, :label.shape[0], :label.shape[1]] = label
    return images, labels


class Block(nn.Sequential):
    def __init__(self, cin, cout):
        super().__init__(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, classes, width=8):
        super().__init__()
        w = [width, width * 2, width * 4, width * 8]
        self.down = nn.ModuleList([Block(1, w[0]), Block(w[0], w[1]), Block(w[1], w[2]), Block(w[2], w[3])])
        self.up = nn.ModuleList([nn.ConvTranspose2d(w[i + 1], w[i], 2, stride=2) for i in range(3)])
        self.merge = nn.ModuleList([Block(2 * w[i], w[i]) for i in range(3)])
        self.head = nn.Conv2d(w[0], classes, 1)

    def forward(self, x):
        skips = []
        for i, block in enumerate(self.down):
            x = block(x if i == 0 else F.max_pool2d(x, 2))
            skips.append(x)
        for i in (2, 1, 0):
            x = self.merge[i](torch.cat([self.up[i](x), skips[i]], 1))
        return self.head(x)


def augment(batch: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
    out = []
    for image in batch:
        x = image.clone()
        x = x.clamp(min=0) ** float(rng.uniform(0.7, 1.4))
        yy, xx = torch.meshgrid(torch.linspace(-1, 1, x.shape[1]), torch.linspace(-1, 1, x.shape[2]), indexing="ij")
        c = rng.normal(0, 0.12, 5)
        x = x * torch.exp(c[0] * xx + c[1] * yy + c[2] * xx * yy + c[3] * xx ** 2 + c[4] * yy ** 2).float()
        if rng.uniform() < 0.5:
            sigma = float(rng.uniform(0.3, 1.0))
            k = torch.exp(-torch.arange(-2, 3, dtype=torch.float32) ** 2 / (2 * sigma ** 2))
            k = k / k.sum()
            x = F.conv2d(x[None], k.view(1, 1, 1, 5), padding=(0, 2))
            x = F.conv2d(x, k.view(1, 1, 5, 1), padding=(2, 0))[0]
        s = float(rng.uniform(0.0, 0.05))
        x = torch.sqrt((x + s * torch.randn_like(x)) ** 2 + (s * torch.randn_like(x)) ** 2)
        out.append(x / x.flatten().quantile(0.995).clamp(min=1e-6))
    return torch.stack(out).clamp(0, 1.2)


def dice(pred: np.ndarray, ref: np.ndarray, classes: int) -> np.ndarray:
    scores = np.zeros((len(pred), classes - 1))
    for i in range(len(pred)):
        for c in range(1, classes):
            p, r = pred[i] == c, ref[i] == c
            scores[i, c - 1] = 2 * (p & r).sum() / max(p.sum() + r.sum(), 1)
    return scores


def run(folder: Path, steps: int, augmentation: bool, seed: int) -> dict:
    description = json.loads((folder / "dataset.json").read_text())
    classes = len(description["classes"])
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    train = load(folder, description["splits"]["train"])
    model = UNet(classes)
    optimiser = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, max_lr=3e-3, total_steps=steps)
    images, labels = torch.from_numpy(train[0]), torch.from_numpy(train[1])
    started = time.monotonic()
    model.train()
    for step in range(steps):
        index = torch.from_numpy(rng.choice(len(images), 4, replace=False))
        top = int(rng.integers(0, images.shape[2] - CROP + 1))
        left = int(rng.integers(0, images.shape[3] - CROP + 1))
        x = images[index, :, top:top + CROP, left:left + CROP]
        y = labels[index, top:top + CROP, left:left + CROP]
        if rng.uniform() < 0.5:
            x, y = x.flip(-1), y.flip(-1)
        if augmentation:
            x = augment(x, rng)
        loss = F.cross_entropy(model(x), y)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        schedule.step()
        if (step + 1) % 100 == 0:
            print(f"    step {step + 1}/{steps} loss {loss.item():.4f}", flush=True)
    seconds = time.monotonic() - started
    model.eval()
    result = {"augmentation": augmentation, "steps": steps, "seed": seed, "train_seconds": round(seconds, 1)}
    for split in ("val", "test"):
        x, y = load(folder, description["splits"][split])
        with torch.no_grad():
            pred = torch.cat([model(torch.from_numpy(x[i:i + 8])).argmax(1) for i in range(0, len(x), 8)])
        scores = dice(pred.numpy(), y, classes)
        result[split] = {name: f"{scores[:, i].mean():.3f} ± {scores[:, i].std():.3f}"
                         for i, name in enumerate(description["classes"][1:])}
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("set", type=Path)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--augmentation", choices=["both", "off", "on"], default="both")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, numpy {np.__version__}")
    for augmentation in {"both": (False, True), "off": (False,), "on": (True,)}[args.augmentation]:
        print(json.dumps(run(args.set, args.steps, augmentation, args.seed)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
