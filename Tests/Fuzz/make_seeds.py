"""Seed corpora for the fuzz targets (issue #10), written into Tests/Fuzz/work/seeds/<run>/ (git-ignored).

DICOM seeds are the conformance corpus (Datasets/cache/dicom-corpus, `make corpus`) files under 256 KB, sorted
by transfer syntax so each decoder family gets its own run; the other seeds are the test fixtures and small
files generated here with numpy and h5py (the worktree's .venv), one per form the readers accept.
Usage: make_seeds.py ROOT OUT
"""
import json
import pathlib
import shutil
import struct
import sys
import zlib

import h5py
import numpy as np

root, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
MAX_SEED_BYTES = 256 * 1024

DICOM_FAMILIES = [  # transfer syntax UIDs per decoder family; anything else is native
    ("dicom-jpeg2000", [b"1.2.840.10008.1.2.4.90", b"1.2.840.10008.1.2.4.91"]),
    ("dicom-jpegls", [b"1.2.840.10008.1.2.4.80", b"1.2.840.10008.1.2.4.81"]),
    ("dicom-jpeg", [b"1.2.840.10008.1.2.4.50", b"1.2.840.10008.1.2.4.51", b"1.2.840.10008.1.2.4.57",
                    b"1.2.840.10008.1.2.4.70"]),
    ("dicom-rle", [b"1.2.840.10008.1.2.5\0", b"1.2.840.10008.1.2.5 "]),
]
SEG_SOP_CLASS = b"1.2.840.10008.5.1.4.1.1.66.4"


def folder(name):
    path = out / name
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def dicom_seeds():
    corpus = root / "Datasets/cache/dicom-corpus"
    files = sorted(p for p in corpus.rglob("*") if p.is_file() and "wheels" not in p.parts
                   and not p.name.startswith(".") and p.stat().st_size <= MAX_SEED_BYTES)
    if not files:
        sys.exit(f"make_seeds.py: no DICOM corpus in {corpus}; run 'make corpus'")
    targets = {name: folder(name) for name, _ in DICOM_FAMILIES}
    targets["dicom-native"] = folder("dicom-native")
    seg = folder("dicom-seg")
    for index, path in enumerate(files):
        head = path.read_bytes()[:4096]
        family = next((name for name, uids in DICOM_FAMILIES if any(uid in head for uid in uids)), "dicom-native")
        shutil.copy(path, targets[family] / f"{index:03d}-{path.name}")
        if SEG_SOP_CLASS in head:
            shutil.copy(path, seg / f"{index:03d}-{path.name}")
    for path in sorted(corpus.rglob("*")):  # SEG files above the size cap still seed the SEG reader
        if path.is_file() and "wheels" not in path.parts and SEG_SOP_CLASS in path.read_bytes()[:4096]:
            shutil.copy(path, seg / path.name)


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png(rows, columns, bit_depth, color_type, samples, palette=None):
    """A PNG written byte by byte (filter 0 rows), so each header field is what the seed names."""
    raw = b"".join(b"\0" + samples[r].tobytes() for r in range(rows))
    body = png_chunk(b"IHDR", struct.pack(">IIBBBBB", columns, rows, bit_depth, color_type, 0, 0, 0))
    if palette is not None:
        body += png_chunk(b"PLTE", palette)
    return b"\x89PNG\r\n\x1a\n" + body + png_chunk(b"IDAT", zlib.compress(raw)) + png_chunk(b"IEND", b"")


def png_seeds():
    target = folder("png")
    grid = np.arange(64, dtype=np.uint8).reshape(8, 8)
    (target / "gray8.png").write_bytes(png(8, 8, 8, 0, grid * 4))
    (target / "gray16.png").write_bytes(png(8, 8, 16, 0, (grid.astype(">u2") * 1000)))
    (target / "labels8.png").write_bytes(png(8, 8, 8, 0, grid % 3))
    (target / "rgb8.png").write_bytes(png(8, 8, 8, 2, np.stack([grid, grid * 2, grid * 3], -1)))
    (target / "rgba16.png").write_bytes(png(4, 4, 16, 6, np.full((4, 4, 4), 513, ">u2")))
    (target / "graya8.png").write_bytes(png(4, 4, 8, 4, np.full((4, 4, 2), 200, np.uint8)))
    (target / "palette.png").write_bytes(png(4, 4, 8, 3, np.arange(16, dtype=np.uint8).reshape(4, 4) % 3,
                                             palette=bytes(range(9))))
    (target / "gray1.png").write_bytes(png(8, 8, 1, 0, np.full((8, 1), 0xA5, np.uint8)))


def hdf5_seeds():
    target = folder("hdf5")
    rng = np.random.default_rng(10)  # seed 10 (the number), recorded here
    with h5py.File(target / "image2d.h5", "w") as f:
        f.create_dataset("image", data=rng.random((6, 5), dtype=np.float32))
    with h5py.File(target / "volume-spacing.h5", "w") as f:
        d = f.create_dataset("image", data=rng.integers(0, 4000, (3, 4, 5), dtype=np.uint16))
        d.attrs["spacing"] = np.array([0.5, 0.5, 2.0])
    with h5py.File(target / "rgb.h5", "w") as f:
        f.create_dataset("image", data=rng.integers(0, 255, (6, 5, 3), dtype=np.uint8))
    with h5py.File(target / "labels-chunked.h5", "w") as f:
        d = f.create_dataset("labels", data=rng.integers(0, 3, (2, 6, 5), dtype=np.uint8),
                             chunks=(1, 6, 5), compression="gzip")
        d.attrs["spacing"] = np.array([2.0, 0.5, 0.5])
    with h5py.File(target / "labels-int32.h5", "w") as f:
        f.create_dataset("labels", data=rng.integers(0, 3, (6, 5), dtype=np.int32))
        f.create_dataset("image", data=rng.random((6, 5)))


def nifti_seeds():
    """The committed NIfTI fixtures (every datatype, NIfTI-1 and -2, gzip or not, 2-D to 4-D)."""
    target = folder("nifti")
    for path in sorted((root / "Tests/ImageFilesTests/Fixtures/nifti").glob("*.nii*")):
        shutil.copy(path, target / path.name)


def rtstruct_seeds():
    """The committed structure sets (made, position-only, aligned, dicompyler-core's)."""
    target = folder("rtstruct")
    for path in sorted((root / "Tests/SliceLabIOTests/Fixtures/rtstruct").glob("*/RS.dcm")):
        shutil.copy(path, target / f"{path.parent.name}-RS.dcm")


def nrrd_seeds():
    """The committed NRRD files and Slicer segmentations (attached headers; the detached one's data is beside it)."""
    target = folder("nrrd")
    for path in sorted((root / "Tests/SliceLabIOTests/Fixtures/nrrd").glob("*.nrrd")):
        shutil.copy(path, target / path.name)


def multipart_seeds():
    """WADO-RS bodies: the boundary on the first line, then the multipart/related body (parts of DICOM bytes)."""
    target = folder("multipart")
    dicom = (root / "Tests/SliceLabIOTests/Fixtures/rtstruct/made/ct/CT000.dcm").read_bytes()[:2048]
    for index, parts in enumerate([[dicom], [dicom, b""], [b"x" * 10, dicom, b"--b0und"]]):
        body = b"".join(b"--b0und\r\nContent-Type: application/dicom\r\n\r\n" + p + b"\r\n" for p in parts)
        (target / f"body{index}").write_bytes(b"b0und\n" + body + b"--b0und--\r\n")


def safetensors_seeds():
    target = folder("safetensors")
    shutil.copy(root / "Tests/DeepLabTests/Fixtures/small.safetensors", target / "small.safetensors")
    tensors = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32}
    header, body = {"__metadata__": {"format": "pt"}}, b""
    for name, dtype in tensors.items():
        data = np.arange(6, dtype=dtype).reshape(2, 3).tobytes()
        header[f"t.{name}"] = {"dtype": name, "shape": [2, 3], "data_offsets": [len(body), len(body) + len(data)]}
        body += data
    bf16 = (np.arange(4, dtype=np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()
    header["t.BF16"] = {"dtype": "BF16", "shape": [4], "data_offsets": [len(body), len(body) + len(bf16)]}
    body += bf16
    text = json.dumps(header).encode()
    (target / "every-dtype.safetensors").write_bytes(struct.pack("<Q", len(text)) + text + body)


def dataset_json_seeds():
    target = folder("dataset-json")
    base = {"name": "fuzz", "classes": ["background", "lesion"], "modality": "OT",
            "splits": {"train": ["case-a"], "val": [], "test": []}}
    variants = {
        "plain": base,
        "percentile": dict(base, spacing=[0.5, 0.5],
                           preprocessing={"normalize": "percentile", "low": 0.5, "high": 99.5}),
        "window": dict(base, preprocessing={"normalize": "window", "center": 40, "width": 400}),
        "zscore": dict(base, preprocessing={"normalize": "zscore"}, source="provenance is ignored"),
        "two-splits": dict(base, splits={"train": ["case-a"], "test": ["case-a", "case-b"]}),
    }
    for name, value in variants.items():
        (target / f"{name}.json").write_text(json.dumps(value))


def cli_seeds(commands):
    target = folder("cli")
    lines = {
        "info": ["scan.dcm", "--json"],
        "convert": ["in.dcm", "--out", "out.h5", "--frames", "0"],
        "segment": ["in.dcm", "--model", "m.h5", "--out", "o.h5", "--threads", "2", "--probabilities"],
        "cluster": ["in.png", "--classes", "3", "--method=kmeans", "--seed", "7"],
        "evaluate": ["pred", "ref", "--classes", "0,1,2", "--results", "r.h5"],
        "compare": ["set", "--model", "m.h5", "--out", "cmp"],
        "train": ["set", "--out", "m.h5", "--steps", "10", "--learning-rate", "1e-3", "--spacing=1,1"],
        "demo": ["--out", "demo"],
    }
    for index, name in enumerate(commands):
        (target / f"{name}.args").write_bytes(bytes([index]) + b"\0".join(a.encode() for a in lines.get(name, [])))


dicom_seeds()
png_seeds()
hdf5_seeds()
nifti_seeds()
rtstruct_seeds()
nrrd_seeds()
multipart_seeds()
safetensors_seeds()
dataset_json_seeds()
cli_seeds(["info", "convert", "segment", "cluster", "evaluate", "compare", "train", "demo"])
print(f"make_seeds.py: seeds in {out}: "
      + ", ".join(f"{p.name} {len(list(p.iterdir()))}" for p in sorted(out.iterdir()) if p.is_dir()))
