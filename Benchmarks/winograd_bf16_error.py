"""The error of Winograd convolution with bf16 operands (issue #40's lead for bf16 ResNets): a 3 x 3 convolution of
256 -> 256 channels on a 32 x 32 map of post-ReLU normal activations (weights normal / sqrt(9 C)), computed in float64
directly, directly with bf16-rounded operands (what oneDNN's bf16 convolution multiplies), and by Winograd F(2x2, 3x3)
and F(4x4, 3x3) (Lavin & Gray's points 0, +-1, +-2) with the transformed inputs and weights rounded to bf16 (round to
nearest even) and everything else in float64. Prints each one's relative RMS error against the float64 direct sum and
its ratio to the direct bf16 error. numpy only; seeded (0).

Run: `.venv/bin/python Benchmarks/winograd_bf16_error.py`.
"""
import numpy as np

SEED = 0


def bf16(x):
    """x rounded to bf16 (to nearest, ties to even) and widened to float64."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32).astype(np.float64)


def direct(x, w, size):
    out = np.zeros((w.shape[0], size, size))
    for ky in range(3):
        for kx in range(3):
            out += np.einsum("kc,chw->khw", w[:, :, ky, kx], x[:, ky:ky + size, kx:kx + size])
    return out


def winograd(x, w, size, bt, g, at, rounded):
    m = at.shape[0]
    u = rounded(np.einsum("ij,kcjl,ml->kcim", g, w, g))
    out = np.zeros((w.shape[0], size, size))
    for ty in range(0, size, m):
        for tx in range(0, size, m):
            v = rounded(np.einsum("ij,cjl,ml->cim", bt, x[:, ty:ty + m + 2, tx:tx + m + 2], bt))
            out[:, ty:ty + m, tx:tx + m] = np.einsum("ij,kjl,ml->kim", at, np.einsum("kcij,cij->kij", u, v), at)
    return out


F2 = (np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], float),
      np.array([[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]], float),
      np.array([[1, 1, 1, 0], [0, 1, -1, -1]], float))
F4 = (np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
                [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], float),
      np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
                [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]], float),
      np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], float))


def main(channels=256, size=32):
    generator = np.random.default_rng(SEED)
    x = np.maximum(generator.normal(size=(channels, size + 2, size + 2)), 0)
    w = generator.normal(size=(channels, channels, 3, 3)) / np.sqrt(9 * channels)
    reference = direct(x, w, size)
    error = lambda y: float(np.sqrt(((y - reference) ** 2).mean() / (reference ** 2).mean()))
    base = error(direct(bf16(x), bf16(w), size))
    print(f"{channels} -> {channels} channels, {size} x {size}, seed {SEED}; relative RMS error against float64:")
    print(f"  direct, bf16 operands        {base:.2e}")
    for name, (bt, g, at) in (("F(2x2, 3x3)", F2), ("F(4x4, 3x3)", F4)):
        exact = error(winograd(x, w, size, bt, g, at, lambda a: a))
        rounded = error(winograd(x, w, size, bt, g, at, bf16))
        print(f"  {name}, bf16 operands   {rounded:.2e} ({rounded / base:.2f} x direct bf16; float64 operands "
              f"{exact:.1e})")


if __name__ == "__main__":
    main()
