"""Checks that two SliceLab results files hold the same results, bit for bit.

    python Cluster/same_results.py SINGLE.h5 MERGED.h5

Every group, dataset and attribute of one file must be in the other with the same type, shape and bytes (NaN
equals NaN), except the attributes that record when and by which build a run was written (`created`,
`software_version`). Prints `same: …` and exits 0, or prints the first differences and exits 1. Used by the
sharding tests and `make cluster-test`; needs h5py and numpy (Tests/requirements.txt).
"""
import sys

import h5py
import numpy as np

IGNORED_ATTRIBUTES = {"created", "software_version"}


def items(f):
    found = {}
    f.visititems(lambda name, obj: found.__setitem__(name, obj))
    found["/"] = f
    return found


def same_value(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
        return False
    if a.dtype.kind == "f":
        bits = lambda x: np.ascontiguousarray(x).reshape(-1).view(np.uint8)  # noqa: E731 (bit for bit)
        return a.dtype == b.dtype and np.array_equal(bits(a), bits(b))
    if a.dtype.kind == "O":
        return [x.decode() if isinstance(x, bytes) else x for x in a.ravel()] == \
            [x.decode() if isinstance(x, bytes) else x for x in b.ravel()]
    return np.array_equal(a, b)


def differences(path_a, path_b):
    with h5py.File(path_a, "r") as fa, h5py.File(path_b, "r") as fb:
        ia, ib = items(fa), items(fb)
        problems = [f"only in {path_a}: {n}" for n in sorted(set(ia) - set(ib))]
        problems += [f"only in {path_b}: {n}" for n in sorted(set(ib) - set(ia))]
        for name in sorted(set(ia) & set(ib)):
            a, b = ia[name], ib[name]
            if isinstance(a, h5py.Dataset) != isinstance(b, h5py.Dataset):
                problems.append(f"{name}: a dataset in one file, a group in the other")
                continue
            if isinstance(a, h5py.Dataset):
                if a.dtype != b.dtype or a.shape != b.shape:
                    problems.append(f"{name}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}")
                elif not same_value(a[()], b[()]):
                    problems.append(f"{name}: values differ")
            keys_a, keys_b = set(a.attrs) - IGNORED_ATTRIBUTES, set(b.attrs) - IGNORED_ATTRIBUTES
            if keys_a != keys_b:
                problems.append(f"{name}: attributes {sorted(keys_a ^ keys_b)} in one file only")
            for key in sorted(keys_a & keys_b):
                if not same_value(a.attrs[key], b.attrs[key]):
                    problems.append(f"{name}@{key}: {a.attrs[key]!r} vs {b.attrs[key]!r}")
        return problems, len(ia)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: same_results.py A.h5 B.h5")
    problems, count = differences(sys.argv[1], sys.argv[2])
    if problems:
        print("\n".join(problems[:20]))
        sys.exit(1)
    print(f"same: {count} objects, h5py {h5py.__version__}")


if __name__ == "__main__":
    main()
