"""The MNI ICBM152 2009a (nonlinear symmetric) T1 template and its tissue probability maps, read straight
out of the nilearn wheel (which ships them as 1 mm, 197 x 233 x 189 uint8 NIfTI volumes)."""

from __future__ import annotations

import gzip
import hashlib
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import nibabel
import numpy as np

NILEARN_VERSION = "0.14.1"
WHEEL_NAME = f"nilearn-{NILEARN_VERSION}-py3-none-any.whl"
#: sha256 of the members we read, so a different wheel cannot silently change every set built from it.
MEMBERS = {
    "t1": ("nilearn/datasets/data/mni_icbm152_t1_tal_nlin_sym_09a_converted.nii.gz",
           "421a10e872fd6cadae7f61d358dffbcc1795a497d61ee76c5dda2503e1a1e9e6"),
    "gm": ("nilearn/datasets/data/mni_icbm152_gm_tal_nlin_sym_09a_converted.nii.gz",
           "97a5ca69bd24db37a9cb7b32525e1733a209af904129bf1cd36da06d24243bed"),
    "wm": ("nilearn/datasets/data/mni_icbm152_wm_tal_nlin_sym_09a_converted.nii.gz",
           "382d92812de4744f9c86c7a0e4f680dc317a0a50e4da1f0153618a6798c7b7db"),
}


class TemplateError(RuntimeError):
    """The nilearn wheel could not be fetched or does not hold the expected template files."""


@dataclass(frozen=True)
class Template:
    """The template in NIfTI voxel order (i, j, k) = (x, y, z), RAS+ world coordinates in millimetres.

    t1 is the T1 intensity (0...255), gm and wm the probabilities (0...1), affine the voxel-to-RAS matrix."""

    t1: np.ndarray
    gm: np.ndarray
    wm: np.ndarray
    affine: np.ndarray
    provenance: dict

    def labels(self) -> np.ndarray:
        """0 background/CSF, 1 gray matter, 2 white matter: the class of maximum probability where that
        probability is at least 0.5 (GM and WM probabilities sum to at most 1, so at most one qualifies)."""
        labels = np.zeros(self.t1.shape, dtype=np.uint8)
        labels[self.gm >= 0.5] = 1
        labels[self.wm >= 0.5] = 2
        return labels


def fetch_wheel(wheel_dir: Path) -> Path:
    """`pip download --no-deps nilearn==<pinned>` into wheel_dir (skipped when the wheel is already there)."""
    wheel = wheel_dir / WHEEL_NAME
    if wheel.is_file():
        return wheel
    wheel_dir.mkdir(parents=True, exist_ok=True)
    print(f"downloading {WHEEL_NAME} (pip download --no-deps) into {wheel_dir}", flush=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               f"nilearn=={NILEARN_VERSION}", "-d", str(wheel_dir)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0 or not wheel.is_file():
        raise TemplateError(f"{' '.join(command)} failed ({result.returncode}): {result.stderr.strip()[-800:]}")
    return wheel


def _volume(archive: zipfile.ZipFile, wheel: Path, member: str) -> tuple[np.ndarray, np.ndarray, str]:
    try:
        compressed = archive.read(member)
    except KeyError:
        raise TemplateError(f"{wheel}: does not contain {member}") from None
    digest = hashlib.sha256(compressed).hexdigest()
    image = nibabel.Nifti1Image.from_bytes(gzip.decompress(compressed))
    data = np.asanyarray(image.dataobj)
    if data.shape != (197, 233, 189):
        raise TemplateError(f"{wheel}: {member} has shape {data.shape}, expected (197, 233, 189)")
    return data, image.affine, digest


def load_template(wheel_dir: Path) -> Template:
    """Reads T1, GM and WM from the pinned nilearn wheel, downloading the wheel first if needed."""
    wheel = fetch_wheel(wheel_dir)
    volumes, digests = {}, {}
    affine = None
    with zipfile.ZipFile(wheel) as archive:
        for key, (member, expected) in MEMBERS.items():
            data, member_affine, digest = _volume(archive, wheel, member)
            if digest != expected:
                raise TemplateError(f"{wheel}: {member} has sha256 {digest}, expected {expected} "
                                    f"(a different nilearn build would change every set built from it)")
            if affine is not None and not np.allclose(affine, member_affine):
                raise TemplateError(f"{wheel}: {member} is not on the T1 template's grid")
            affine = member_affine
            volumes[key] = data
            digests[member.rsplit("/", 1)[-1]] = digest
    if not np.allclose(affine[:3, :3], np.eye(3)):
        raise TemplateError(f"{wheel}: expected an axis-aligned 1 mm RAS grid, got affine {affine.tolist()}")
    provenance = {"package": f"nilearn=={NILEARN_VERSION}", "wheel": WHEEL_NAME,
                  "wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(), "members_sha256": digests,
                  "template": "MNI ICBM152 2009a nonlinear symmetric, 1 mm (Fonov et al., NeuroImage 2011)"}
    return Template(t1=volumes["t1"].astype(np.float32), gm=volumes["gm"].astype(np.float32) / 255.0,
                    wm=volumes["wm"].astype(np.float32) / 255.0, affine=affine, provenance=provenance)
