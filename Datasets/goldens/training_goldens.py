"""Goldens for SliceLab's training numerics (issue #5): losses and their gradients from PyTorch and MONAI,
optimizer trajectories from torch.optim, learning-rate schedules from torch.optim.lr_scheduler, and gradient
clipping from torch.nn.utils.clip_grad_norm_.

Run with the shared goldens venv:
    /work/goldens-venv/bin/python Datasets/goldens/training_goldens.py
It writes Tests/DeepLabTests/Fixtures/training_goldens.json (values as float64 of the float32 results) and
records the torch and MONAI versions in it. Inputs are drawn from a seeded torch.Generator and stored in the
file, so the Swift tests feed exactly the same numbers.
"""
import json
import pathlib
import sys

import monai
import torch
from monai.losses import DiceCELoss, DiceLoss

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "Tests/DeepLabTests/Fixtures/training_goldens.json"
generator = torch.Generator().manual_seed(20261129)


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def loss_case(name, kind, loss_fn, logits, labels, **options):
    z = logits.clone().requires_grad_(True)
    loss = loss_fn(z, labels)
    loss.backward()
    return {"name": name, "kind": kind, "options": options, "logits_shape": list(logits.shape),
            "logits": flat(logits), "labels": [int(v) for v in labels.reshape(-1).tolist()],
            "loss": float(loss.detach()), "gradient": flat(z.grad)}


def focal(z, y, gamma, alpha, ignore):
    """Multi-class focal loss, mean over pixels not ignored: -alpha[y] (1 - p_y)^gamma log p_y."""
    keep = y != ignore
    log_p = torch.log_softmax(z, dim=1)
    safe = torch.where(keep, y, torch.zeros_like(y))
    log_py = torch.gather(log_p, 1, safe.unsqueeze(1)).squeeze(1)
    weight = alpha[safe] if alpha is not None else torch.ones_like(log_py)
    per_pixel = -weight * (1 - log_py.exp()).pow(gamma) * log_py
    return per_pixel[keep].mean()


def losses():
    n, k, h, w = 2, 4, 5, 6
    logits = torch.randn(n, k, h, w, generator=generator) * 2
    labels = torch.randint(0, k, (n, h, w), generator=generator)
    ignored = labels.clone()
    ignored[torch.rand(n, h, w, generator=generator) < 0.2] = -100
    weights = torch.tensor([0.2, 1.0, 2.5, 0.7])
    cases = [
        loss_case("ce", "ce", torch.nn.CrossEntropyLoss(), logits, labels),
        loss_case("ce_weighted_ignore", "ce", torch.nn.CrossEntropyLoss(weight=weights, ignore_index=-100),
                  logits, ignored, class_weights=weights.tolist(), ignore_label=-100),
    ]
    onehot = lambda y: y.unsqueeze(1)  # MONAI takes labels as [N, 1, H, W]
    for background in (True, False):
        for batch in (False, True):
            fn = DiceLoss(softmax=True, to_onehot_y=True, include_background=background, batch=batch)
            cases.append(loss_case(f"dice_bg{int(background)}_batch{int(batch)}", "dice",
                                   lambda z, y: fn(z, onehot(y)), logits, labels,
                                   include_background=background, batch=batch))
    fn = DiceLoss(softmax=True, to_onehot_y=True, include_background=False, smooth_nr=0.5, smooth_dr=1.5,
                  weight=weights[1:], ignore_index=-100)
    cases.append(loss_case("dice_smooth_weighted_ignore", "dice", lambda z, y: fn(z, onehot(y)), logits, ignored,
                           include_background=False, smooth_nr=0.5, smooth_dr=1.5,
                           class_weights=weights.tolist(), ignore_label=-100))
    for background in (True, False):
        fn = DiceCELoss(softmax=True, to_onehot_y=True, include_background=background, weight=weights,
                        lambda_dice=0.7, lambda_ce=1.3)
        cases.append(loss_case(f"dicece_bg{int(background)}", "dicece", lambda z, y: fn(z, onehot(y)), logits,
                               labels, include_background=background, class_weights=weights.tolist(),
                               lambda_dice=0.7, lambda_ce=1.3))
    cases.append(loss_case("focal", "focal", lambda z, y: focal(z, y, 2.0, weights, -100), logits, ignored,
                           gamma=2.0, class_weights=weights.tolist(), ignore_label=-100))
    return cases


def optimizers():
    shapes = [[3, 4], [5]]
    initial = [torch.randn(*s, generator=generator) for s in shapes]
    steps = 6
    gradients = [[torch.randn(*s, generator=generator) for s in shapes] for _ in range(steps)]
    rates = [0.1 * (1 - i / steps) ** 0.9 for i in range(steps)]  # a changing rate, as under the schedule
    configurations = [
        ("sgd", dict(momentum=0.9, weight_decay=1e-4)),
        ("sgd", dict(momentum=0.9, weight_decay=1e-2, nesterov=True)),
        ("sgd", dict(momentum=0.5, dampening=0.3, weight_decay=0.0)),
        ("sgd", dict(momentum=0.0, weight_decay=1e-3)),
        ("adamw", dict(betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2)),
        ("adamw", dict(betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ]
    cases = []
    for kind, options in configurations:
        params = [p.clone().requires_grad_(True) for p in initial]
        cls = torch.optim.SGD if kind == "sgd" else torch.optim.AdamW
        optimizer = cls(params, lr=rates[0], foreach=False, **options)
        trajectory = []
        for step in range(steps):
            for group in optimizer.param_groups:
                group["lr"] = rates[step]
            for p, g in zip(params, gradients[step]):
                p.grad = g.clone()
            optimizer.step()
            trajectory.append([flat(p) for p in params])
        cases.append({"kind": kind, "options": {k: list(v) if isinstance(v, tuple) else v
                                                for k, v in options.items()},
                      "values_after_each_step": trajectory})
    return {"shapes": shapes, "initial": [flat(p) for p in initial],
            "gradients": [[flat(g) for g in step] for step in gradients], "learning_rates": rates,
            "cases": cases}


def clipping():
    grads = [torch.randn(3, 4, generator=generator) * 3, torch.randn(7, generator=generator)]
    cases = []
    for max_norm in (1.0, 100.0):
        params = [torch.zeros_like(g, requires_grad=True) for g in grads]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
        cases.append({"max_norm": max_norm, "total_norm": float(norm), "clipped": [flat(p.grad) for p in params]})
    return {"gradients": [flat(g) for g in grads], "cases": cases}


def schedules():
    def run(make, steps):
        p = torch.zeros(1, requires_grad=True)
        optimizer = torch.optim.SGD([p], lr=0.01)
        scheduler = make(optimizer)
        rates = []
        for _ in range(steps):
            rates.append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            scheduler.step()
        return rates
    return {"base": 0.01,
            "poly": {"total_iters": 50, "power": 0.9, "rates": run(
                lambda o: torch.optim.lr_scheduler.PolynomialLR(o, total_iters=50, power=0.9), 55)},
            "warmup": {"total_iters": 10, "start_factor": 0.1, "rates": run(
                lambda o: torch.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=10), 10)}}


def main():
    goldens = {"generator": "Datasets/goldens/training_goldens.py",
               "versions": {"torch": torch.__version__, "monai": monai.__version__,
                            "python": sys.version.split()[0]},
               "losses": losses(), "optimizers": optimizers(), "clipping": clipping(), "schedules": schedules()}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(goldens))
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size} bytes) with torch {torch.__version__}, "
          f"MONAI {monai.__version__}")


if __name__ == "__main__":
    main()
