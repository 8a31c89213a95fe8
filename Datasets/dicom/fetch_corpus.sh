#!/usr/bin/env bash
# Fetches the DICOM conformance corpus: every file of pydicom-data and of pydicom's own test files, from PyPI,
# into Datasets/cache/dicom-corpus (git-ignored). Idempotent: does nothing when the pinned versions are there.
set -euo pipefail
PYDICOM_VERSION=3.0.2
PYDICOM_DATA_VERSION=1.0.0
root="$(cd "$(dirname "$0")/../.." && pwd)"
target="$root/Datasets/cache/dicom-corpus"
stamp="$target/.fetched-pydicom-$PYDICOM_VERSION-data-$PYDICOM_DATA_VERSION"
[ -f "$stamp" ] && exit 0
python="${PYTHON:-python3}"
[ -x "$root/.venv/bin/python" ] && python="$root/.venv/bin/python"
echo "make corpus: fetching pydicom==$PYDICOM_VERSION and pydicom-data==$PYDICOM_DATA_VERSION into $target"
rm -rf "$target"
mkdir -p "$target/wheels"
"$python" -m pip download -q --no-deps "pydicom==$PYDICOM_VERSION" "pydicom-data==$PYDICOM_DATA_VERSION" \
    -d "$target/wheels"
"$python" - "$target" <<'PY'
import pathlib, sys, zipfile
target = pathlib.Path(sys.argv[1])
for wheel in sorted((target / "wheels").glob("*.whl")):
    with zipfile.ZipFile(wheel) as archive:
        if wheel.name.startswith("pydicom_data"):
            archive.extractall(target / "pydicom-data")
        else:
            members = [m for m in archive.namelist() if m.startswith("pydicom/data/test_files/")]
            archive.extractall(target / "pydicom", members)
PY
touch "$stamp"
echo "make corpus: $(find "$target" -type f -not -path '*/wheels/*' | wc -l) files"
