"""Seeded, order-independent random streams and deterministic DICOM UIDs."""

from __future__ import annotations

import hashlib
import uuid

import numpy as np

#: Namespace for name-based (version 5) UUIDs, so UIDs are stable across runs and machines.
UID_NAMESPACE = uuid.UUID("6f1c2e0a-5b7d-4c1e-9a3f-2d8b7e4c9a10")


def _words(parts) -> list[int]:
    digest = hashlib.sha256("\x1f".join(str(part) for part in parts).encode()).digest()
    return [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 32, 4)]


def generator(seed: int, *purpose) -> np.random.Generator:
    """A PCG64 stream for (seed, purpose...): each case and purpose gets its own stream, so results do not
    depend on the order cases are built in."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, *_words(purpose)])))


def uid(seed: int, *purpose) -> str:
    """A DICOM UID in the 2.25 (UUID-derived) root from a name-based UUID of (seed, purpose...)."""
    name = "\x1f".join(str(part) for part in (seed, *purpose))
    return f"2.25.{uuid.uuid5(UID_NAMESPACE, name).int}"
