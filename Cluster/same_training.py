"""Checks that two SliceLab training runs did the same arithmetic up to summation order.

    python Cluster/same_training.py SINGLE.last.h5 PARALLEL.last.h5 [TOLERANCE]

The per-step training losses (`/history/train_loss`) must agree within TOLERANCE relative (default 1e-4, issue
#20), and so must every tensor of `/parameters` (weights and batch-norm running statistics): the largest
|a - b| over the tensor's largest magnitude, at least 0.1. Prints the largest differences and exits 0, or the
first failures and exits 1. Used by `make cluster-test` for the 2-rank `srun --mpi=pmix` job; needs h5py.
"""
import sys

import h5py
import numpy as np


def main(single, parallel, tolerance=1e-4):
    with h5py.File(single, "r") as a, h5py.File(parallel, "r") as b:
        la, lb = a["history/train_loss"][:], b["history/train_loss"][:]
        if la.shape != lb.shape:
            print(f"different step counts: {la.shape} vs {lb.shape}")
            return 1
        loss = float(np.max(np.abs(la - lb) / np.abs(la)))
        names = sorted(a["parameters"])
        if names != sorted(b["parameters"]):
            print("different parameter names")
            return 1
        worst = max((float(np.max(np.abs(a["parameters"][n][()] - b["parameters"][n][()])))
                     / max(float(np.max(np.abs(a["parameters"][n][()]))), 0.1), n) for n in names)
    print(f"{len(la)} steps: largest loss difference {loss:.3g} relative; largest tensor difference {worst[0]:.3g} "
          f"({worst[1]}) over {len(names)} tensors")
    return 0 if loss <= tolerance and worst[0] <= tolerance else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], *(float(t) for t in sys.argv[3:4])))
