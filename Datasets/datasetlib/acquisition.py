"""Simulated MR acquisitions of template slices: slice profile, contrast, coil bias field, k-space
resolution, receiver gain and Rician noise, each drawn from a seeded generator and recorded."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from .seeding import generator

#: Mean T1 template value (0...255 scale) inside the white-matter label: the reference for noise levels.
WHITE_MATTER_TEMPLATE_MEAN = 214.0


@dataclass(frozen=True)
class Scanner:
    """One acquisition protocol. Values are what the simulation used; `describe()` goes into dataset.json."""

    name: str
    series_description: str
    gain: float                   # physical signal per template unit (0...255 T1 scale)
    gamma: float                  # contrast change: s = 255 (a / 255)^gamma before the gain
    noise_fraction: float         # Rician noise sigma as a fraction of the mean white-matter signal
    slice_profile: tuple          # weights over template slices k-1, k, k+1 (or just k)
    slice_thickness_mm: float     # full width at half maximum of that profile
    kspace_fraction: float        # fraction of the k-space extent sampled in each in-plane direction
    bias_amplitude: float         # max |log field| of the smooth multiplicative coil field, as exp(...) - 1
    bias_coefficients: tuple      # Legendre coefficients (p, q, s, c) of the log bias field
    rescale_slope: float          # DICOM RescaleSlope used to store physical values as uint16
    protocol: dict = field(default_factory=dict)  # TR, TE, TI, flip angle, field strength, model name

    @property
    def noise_sigma(self) -> float:
        reference = 255.0 * (WHITE_MATTER_TEMPLATE_MEAN / 255.0) ** self.gamma * self.gain
        return self.noise_fraction * reference

    def describe(self) -> dict:
        info = asdict(self)
        info.pop("bias_coefficients")
        info["slice_profile"] = list(self.slice_profile)
        info["effective_in_plane_resolution_mm"] = round(1.0 / self.kspace_fraction, 4)
        info["noise_sigma"] = round(self.noise_sigma, 4)
        return info


def reference_scanner() -> Scanner:
    """Train and validation protocol: the template at 1 mm with light Rician noise (1 % of white matter)."""
    return Scanner(name="A", series_description="T1 3D MPRAGE 1mm (simulated scanner A)", gain=12.0,
                   gamma=1.0, noise_fraction=0.01, slice_profile=(1.0,), slice_thickness_mm=1.0,
                   kspace_fraction=1.0,
                   bias_amplitude=0.0, bias_coefficients=(), rescale_slope=1.0,
                   protocol={"RepetitionTime": 2300.0, "EchoTime": 2.98, "InversionTime": 900.0,
                             "FlipAngle": 9.0, "MagneticFieldStrength": 3.0,
                             "ManufacturerModelName": "SliceLab simulated scanner A"})


def shifted_scanner(seed: int) -> Scanner:
    """Test protocol, a different scanner: lower T1 contrast (gamma 0.78...0.86), a smooth coil bias field of
    +/-20 %, 80 % of k-space (about 1.25 mm effective in-plane resolution, zero-filled to the 1 mm grid as
    scanners do), 2 mm slice profile, 3 % Rician noise and another receiver gain and rescale slope."""
    rng = generator(seed, "scanner", "B")
    gamma = float(np.round(rng.uniform(0.78, 0.86), 4))
    gain = float(np.round(rng.uniform(30.0, 40.0), 3))
    coefficients = []
    for p in range(4):
        for q in range(4 - p):
            for s in range(4 - p - q):
                if p + q + s == 0:
                    continue
                coefficients.append((p, q, s, float(rng.normal(0.0, 1.0) / (p + q + s))))
    return Scanner(name="B", series_description="T1 3D SPGR 2mm (simulated scanner B)", gain=gain, gamma=gamma,
                   noise_fraction=0.03, slice_profile=(0.25, 0.5, 0.25),
                   slice_thickness_mm=2.0, kspace_fraction=0.8,
                   bias_amplitude=0.2, bias_coefficients=tuple(coefficients),
                   rescale_slope=float(np.round(gain / 16.0, 4)),
                   protocol={"RepetitionTime": 8.2, "EchoTime": 3.2, "InversionTime": 450.0,
                             "FlipAngle": 12.0, "MagneticFieldStrength": 1.5,
                             "ManufacturerModelName": "SliceLab simulated scanner B"})


# MARK: - Geometry

def axial_slice(volume: np.ndarray, k: int) -> np.ndarray:
    """Axial slice k of a RAS-ordered (i, j, k) volume as a DICOM image: rows run anterior to posterior and
    columns patient right to left, so ImageOrientationPatient is (1, 0, 0, 0, 1, 0) in LPS."""
    return np.ascontiguousarray(volume[::-1, ::-1, k].T)


def thick_slice(volume: np.ndarray, k: int, profile: tuple) -> np.ndarray:
    """The slice-profile-weighted average of template slices around k (partial volume across the slab)."""
    half = len(profile) // 2
    total = np.zeros_like(axial_slice(volume, k), dtype=np.float64)
    for offset, weight in zip(range(-half, half + 1), profile):
        index = min(max(k + offset, 0), volume.shape[2] - 1)
        total += weight * axial_slice(volume, index)
    return total.astype(np.float32)


# MARK: - Physics

def _legendre(order: int, x: np.ndarray) -> np.ndarray:
    return [np.ones_like(x), x, 0.5 * (3 * x ** 2 - 1), 0.5 * (5 * x ** 3 - 3 * x)][order]


def _log_bias(scanner: Scanner, rows: np.ndarray, cols: np.ndarray, k: np.ndarray, shape: tuple) -> np.ndarray:
    u = (cols - (shape[1] - 1) / 2) / ((shape[1] - 1) / 2)
    v = (rows - (shape[0] - 1) / 2) / ((shape[0] - 1) / 2)
    w = (k - (shape[2] - 1) / 2) / ((shape[2] - 1) / 2)
    total = np.zeros(np.broadcast(u, v, w).shape)
    for p, q, s, c in scanner.bias_coefficients:
        total += c * _legendre(p, u) * _legendre(q, v) * _legendre(s, w)
    return total


def bias_field(scanner: Scanner, k: int, image_shape: tuple, volume_depth: int) -> np.ndarray:
    """The scanner's smooth 3D multiplicative field on axial slice k, scaled so that its log spans
    +/- log(1 + bias_amplitude) over the whole field of view (one coil field for the whole series)."""
    if scanner.bias_amplitude == 0 or not scanner.bias_coefficients:
        return np.ones(image_shape, dtype=np.float64)
    shape = (image_shape[0], image_shape[1], volume_depth)
    grid = np.meshgrid(np.linspace(0, shape[0] - 1, 24), np.linspace(0, shape[1] - 1, 24),
                       np.linspace(0, shape[2] - 1, 24), indexing="ij")
    coarse = _log_bias(scanner, grid[0], grid[1], grid[2], shape)
    scale = np.log1p(scanner.bias_amplitude) / max(np.abs(coarse - coarse.mean()).max(), 1e-12)
    rows, cols = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
    log_field = _log_bias(scanner, rows, cols, np.full(rows.shape, float(k)), shape)
    return np.exp(scale * (log_field - coarse.mean()))


def _tukey_band(length: int, fraction: float, taper: float = 0.3) -> np.ndarray:
    frequency = np.abs(np.fft.fftfreq(length))          # cycles per pixel, Nyquist 0.5
    cutoff = 0.5 * fraction
    flat = cutoff * (1 - taper)
    weights = np.where(frequency <= flat, 1.0, 0.0)
    ramp = (frequency > flat) & (frequency <= cutoff)
    weights[ramp] = 0.5 * (1 + np.cos(np.pi * (frequency[ramp] - flat) / (cutoff - flat)))
    return weights


def acquire(anatomy: np.ndarray, scanner: Scanner, k: int, volume_depth: int,
            rng: np.random.Generator) -> np.ndarray:
    """Physical MR magnitude image of an anatomy slice (template units, 0...255) through `scanner`:
    contrast, gain, coil field, sampled k-space (Tukey-windowed truncation), complex Gaussian noise, magnitude."""
    signal = 255.0 * np.power(np.clip(anatomy, 0, None) / 255.0, scanner.gamma) * scanner.gain
    signal = signal * bias_field(scanner, k, anatomy.shape, volume_depth)
    if scanner.kspace_fraction < 1.0:
        window = np.outer(_tukey_band(anatomy.shape[0], scanner.kspace_fraction),
                          _tukey_band(anatomy.shape[1], scanner.kspace_fraction))
        complex_image = np.fft.ifft2(np.fft.fft2(signal) * window)
    else:
        complex_image = signal.astype(np.complex128)
    sigma = scanner.noise_sigma
    noisy = complex_image + rng.normal(0.0, sigma, anatomy.shape) + 1j * rng.normal(0.0, sigma, anatomy.shape)
    return np.abs(noisy)
