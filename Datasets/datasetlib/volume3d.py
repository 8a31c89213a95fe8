"""Simulated 3-D MR acquisitions of the template: a per-case smooth deformation (affine plus elastic), a thick-
slice anisotropic grid, a coil bias field, a contrast change, Rician noise; labels from the tissue maps through
the same deformation and slice profile. Every draw comes from a seeded stream and is recorded."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy import ndimage

from .template import Template

#: Mean template T1 value (0...255) in white matter: the reference for noise levels (as in acquisition.py).
WHITE_MATTER_TEMPLATE_MEAN = 214.0
#: Field of view in millimetres (x, y, z in RAS), centred on the template brain: holds the brain at the largest
#: drawn scale with a margin, and keeps every case at most 156 x 192 x 60 voxels.
FIELD_OF_VIEW_MM = (156.0, 192.0, 168.0)
#: Distance of the elastic field's control points in millimetres.
CONTROL_SPACING_MM = 20.0
#: Points across a slice's thickness that the slice profile (a box of the slice spacing) averages.
SLICE_PROFILE_SAMPLES = 5
#: A voxel is tissue when its gray- plus white-matter probability (after the slice profile) is at least this;
#: a tissue voxel is gray or white matter by the larger of the two probabilities.
TISSUE_THRESHOLD = 0.5


@dataclass(frozen=True)
class CaseParameters:
    """What one case's simulation drew (all recorded in provenance.json). Angles in degrees, lengths in mm."""

    spacing_mm: tuple            # (x, y, z) voxel spacing: in-plane x = y, z the slice spacing (= thickness)
    scale: tuple                 # anatomy size relative to the template along x, y, z
    rotation_deg: tuple          # rotations about x, y, z applied to the anatomy
    translation_mm: tuple        # shift of the anatomy
    elastic_sigma_mm: float      # standard deviation of each control point's displacement component
    gamma: float                 # contrast change: s = 255 (a / 255)^gamma before the gain
    gain: float                  # stored value per template unit
    bias_amplitude: float        # max |log field| of the coil field is log(1 + bias_amplitude)
    noise_fraction: float        # Rician noise sigma as a fraction of the mean white-matter signal

    def describe(self) -> dict:
        return {key: (list(value) if isinstance(value, tuple) else value) for key, value in asdict(self).items()}


def draw_parameters(rng: np.random.Generator) -> CaseParameters:
    """One case's acquisition and anatomy: 1.0...1.15 mm in-plane and 2.8...3.3 mm slices, brain size 0.90...1.03
    per axis, rotations within +/-5 degrees, shifts within +/-3 mm, elastic sigma 1...2 mm, gamma 0.8...1.25,
    bias field +/-10...30 %, Rician noise 1...4 % of white matter."""
    in_plane = float(np.round(rng.uniform(1.0, 1.15), 3))
    thickness = float(np.round(rng.uniform(2.8, 3.3), 3))
    return CaseParameters(
        spacing_mm=(in_plane, in_plane, thickness),
        scale=tuple(float(v) for v in np.round(rng.uniform(0.90, 1.03, 3), 4)),
        rotation_deg=tuple(float(v) for v in np.round(rng.uniform(-5.0, 5.0, 3), 3)),
        translation_mm=tuple(float(v) for v in np.round(rng.uniform(-3.0, 3.0, 3), 3)),
        elastic_sigma_mm=float(np.round(rng.uniform(1.0, 2.0), 3)),
        gamma=float(np.round(rng.uniform(0.8, 1.25), 4)),
        gain=float(np.round(rng.uniform(8.0, 16.0), 3)),
        bias_amplitude=float(np.round(rng.uniform(0.1, 0.3), 4)),
        noise_fraction=float(np.round(rng.uniform(0.01, 0.04), 4)))


def _rotation(degrees: tuple) -> np.ndarray:
    ax, ay, az = np.deg2rad(degrees)
    rx = np.array([[1, 0, 0], [0, np.cos(ax), -np.sin(ax)], [0, np.sin(ax), np.cos(ax)]])
    ry = np.array([[np.cos(ay), 0, np.sin(ay)], [0, 1, 0], [-np.sin(ay), 0, np.cos(ay)]])
    rz = np.array([[np.cos(az), -np.sin(az), 0], [np.sin(az), np.cos(az), 0], [0, 0, 1]])
    return rz @ ry @ rx


def _bspline_basis(positions: np.ndarray, count: int) -> np.ndarray:
    """(len(positions), count) weights of the cubic B-spline coefficients 0..count-1 at positions (in control-
    point units): beta3(x - node), nonzero for the 4 nodes around x."""
    distance = np.abs(positions[:, None] - np.arange(count)[None, :])
    weights = np.where(distance < 1.0, 2.0 / 3.0 - distance ** 2 + distance ** 3 / 2.0, 0.0)
    return np.where((distance >= 1.0) & (distance < 2.0), (2.0 - distance) ** 3 / 6.0, weights)


def _legendre(order: int, x: np.ndarray) -> np.ndarray:
    return [np.ones_like(x), x, 0.5 * (3 * x ** 2 - 1), 0.5 * (5 * x ** 3 - 3 * x)][order]


@dataclass
class Simulated:
    """One simulated case on its own grid, NIfTI voxel order (i, j, k) = (x, y, z)."""

    image: np.ndarray            # int16 stored values (no scaling)
    labels: np.ndarray           # uint8: 0 background/CSF, 1 gray matter, 2 white matter
    affine: np.ndarray           # voxel -> RAS mm (axis-aligned, spacing on the diagonal)
    info: dict                   # what the case recorded besides its parameters


def brain_centre(template: Template) -> np.ndarray:
    """RAS centre (mm) of the bounding box of the template's gray and white matter."""
    indices = np.nonzero(template.labels() > 0)
    centre = np.array([(a.min() + a.max()) / 2.0 for a in indices] + [1.0])
    return (template.affine @ centre)[:3]


def simulate(template: Template, centre: np.ndarray, parameters: CaseParameters,
             rng: np.random.Generator) -> Simulated:
    """Resamples the template onto the case's grid through its deformation and slice profile, then acquires it.

    The deformation maps each output point p (RAS mm) to the template point
    q = c + R diag(1/scale) (p - c) + t + d(p), with c the brain centre, R the rotation, t the translation and d a
    cubic-spline interpolated field of Gaussian control-point displacements. Image and labels are sampled with
    the same map (trilinear), each voxel averaging SLICE_PROFILE_SAMPLES points across its slice thickness."""
    spacing = np.array(parameters.spacing_mm)
    fov = np.array(FIELD_OF_VIEW_MM)
    shape = tuple(int(n) for n in np.round(fov / spacing))
    origin = centre - (np.array(shape) - 1) / 2.0 * spacing
    affine = np.eye(4)
    affine[:3, :3] = np.diag(spacing)
    affine[:3, 3] = origin

    # Elastic field: cubic B-spline through control points over the field of view (plus rings outside), in mm.
    fov_min = centre - fov / 2.0
    control_shape = tuple(int(np.ceil(f / CONTROL_SPACING_MM)) + 4 for f in fov)
    control = rng.normal(0.0, parameters.elastic_sigma_mm, (3,) + control_shape)
    coefficients = np.stack([ndimage.spline_filter(control[a], order=3, mode="mirror") for a in range(3)])
    matrix = _rotation(parameters.rotation_deg) @ np.diag(1.0 / np.array(parameters.scale))
    inverse_template = np.linalg.inv(template.affine)
    axes = [origin[a] + spacing[a] * np.arange(shape[a]) for a in range(3)]     # voxel centres, RAS mm

    def displacement(z_offset: float) -> np.ndarray:
        """d on the grid shifted by z_offset mm along z, (nx, ny, nz, 3): the separable B-spline sum, equal to
        map_coordinates(coefficients, order=3, mode="mirror", prefilter=False) away from the outer ring."""
        bases = [_bspline_basis((axes[a] + (z_offset if a == 2 else 0.0) - fov_min[a]) / CONTROL_SPACING_MM + 1.0,
                                control_shape[a]) for a in range(3)]
        return np.einsum("ia,jb,kc,dabc->ijkd", bases[0], bases[1], bases[2], coefficients, optimize=True)

    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)                 # (nx, ny, nz, 3)
    offsets = (np.arange(SLICE_PROFILE_SAMPLES) + 0.5) / SLICE_PROFILE_SAMPLES - 0.5   # fractions of a slice
    anatomy = np.zeros(shape)
    gray = np.zeros(shape)
    white = np.zeros(shape)
    for offset in offsets:
        field = displacement(offset * spacing[2])
        points = grid + np.array([0.0, 0.0, offset * spacing[2]])
        mapped = centre + (points - centre) @ matrix.T + np.array(parameters.translation_mm) + field
        where = np.moveaxis(mapped @ inverse_template[:3, :3].T + inverse_template[:3, 3], -1, 0)
        anatomy += ndimage.map_coordinates(template.t1, where, order=1, mode="constant", cval=0.0)
        gray += ndimage.map_coordinates(template.gm, where, order=1, mode="constant", cval=0.0)
        white += ndimage.map_coordinates(template.wm, where, order=1, mode="constant", cval=0.0)
    del grid, points, mapped, where
    anatomy, gray, white = (v / len(offsets) for v in (anatomy, gray, white))

    labels = np.zeros(shape, dtype=np.uint8)
    tissue = gray + white >= TISSUE_THRESHOLD
    labels[tissue & (gray >= white)] = 1
    labels[tissue & (white > gray)] = 2

    # Smallest Jacobian determinant of the map on the voxel centres (> 0: the deformation folds nowhere).
    field = displacement(0.0)
    jacobian = np.empty(shape + (3, 3))
    for b in range(3):
        derivatives = np.gradient(field[..., b], *spacing)
        for a in range(3):
            jacobian[..., b, a] = matrix[b, a] + derivatives[a]
    minimum_jacobian = float(np.linalg.det(jacobian.reshape(-1, 3, 3)).min())
    if minimum_jacobian <= 0:
        raise ValueError(f"the drawn deformation folds (Jacobian determinant {minimum_jacobian:.3f}); "
                         f"lower the elastic sigma")
    del jacobian, field

    signal = 255.0 * np.power(np.clip(anatomy, 0.0, None) / 255.0, parameters.gamma) * parameters.gain
    signal *= bias_field(shape, parameters.bias_amplitude, rng)
    sigma = parameters.noise_fraction * 255.0 * (WHITE_MATTER_TEMPLATE_MEAN / 255.0) ** parameters.gamma \
        * parameters.gain
    magnitude = np.hypot(signal + rng.normal(0.0, sigma, shape), rng.normal(0.0, sigma, shape))
    image = np.clip(np.rint(magnitude), 0, np.iinfo(np.int16).max).astype(np.int16)
    info = {"shape": list(shape), "noise_sigma": round(float(sigma), 4),
            "minimum_jacobian_determinant": round(minimum_jacobian, 4)}
    return Simulated(image=image, labels=labels, affine=affine, info=info)


def bias_field(shape: tuple, amplitude: float, rng: np.random.Generator) -> np.ndarray:
    """A smooth multiplicative coil field: exp of a sum of 3-D Legendre polynomials up to degree 3 (coefficients
    N(0, 1) / degree), centred and scaled so that its log spans +/- log(1 + amplitude) over the grid."""
    axes = [np.linspace(-1.0, 1.0, n) for n in shape]
    log_field = np.zeros(shape)
    for p in range(4):
        for q in range(4 - p):
            for s in range(4 - p - q):
                if p + q + s == 0:
                    continue
                c = rng.normal(0.0, 1.0) / (p + q + s)
                log_field += c * (_legendre(p, axes[0])[:, None, None] * _legendre(q, axes[1])[None, :, None]
                                  * _legendre(s, axes[2])[None, None, :])
    log_field -= log_field.mean()
    log_field *= np.log1p(amplitude) / max(float(np.abs(log_field).max()), 1e-12)
    return np.exp(log_field)


# MARK: - Statistics the planner needs

def class_statistics(labels: np.ndarray, spacing: tuple, classes: list[str]) -> dict:
    """Per foreground class of one case (NIfTI order x, y, z; z the slice axis): voxels, volume in mL,
    26-connected components (count, largest and smallest in voxels) and the in-plane thickness of the structure
    at the ridge of its in-slice distance map, 2 d - s (d the 2-D Euclidean distance in mm to the nearest other
    pixel of the slice, s the in-plane spacing: a one-pixel line is one pixel thick), median and 5th percentile,
    in mm and in pixels. In-plane because SliceLab segments volumes slice by slice."""
    voxel_ml = float(np.prod(spacing)) / 1000.0
    counts = np.bincount(labels.ravel(), minlength=len(classes))
    result = {"voxels": {name: int(c) for name, c in zip(classes, counts)}}
    structure = np.ones((3, 3, 3), dtype=bool)
    in_plane = float(spacing[0])
    for value, name in enumerate(classes):
        if value == 0:
            continue
        mask = labels == value
        components, count = ndimage.label(mask, structure=structure)
        sizes = np.bincount(components.ravel())[1:] if count else np.zeros(1, dtype=np.int64)
        # A huge z sampling keeps the nearest background pixel in the same slice: a 2-D map per slice.
        distance = ndimage.distance_transform_edt(mask, sampling=(spacing[0], spacing[1], 1.0e6))
        ridge = mask & (distance >= ndimage.maximum_filter(distance, size=(3, 3, 1)))
        thickness = 2.0 * distance[ridge] - in_plane if ridge.any() else np.zeros(1)
        median, p5 = float(np.median(thickness)), float(np.percentile(thickness, 5))
        result[name] = {"voxels": int(counts[value]), "volume_ml": round(float(counts[value]) * voxel_ml, 2),
                        "components": int(count), "largest_component_voxels": int(sizes.max()),
                        "smallest_component_voxels": int(sizes.min()),
                        "thickness_mm_median": round(median, 3), "thickness_mm_p5": round(p5, 3),
                        "thickness_pixels_median": round(median / in_plane, 3),
                        "thickness_pixels_p5": round(p5 / in_plane, 3)}
    return result
