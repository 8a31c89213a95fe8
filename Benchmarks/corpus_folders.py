"""Shared by the DICOM benchmarks: how a corpus folder is split so `slicelab convert` decodes every file."""
import pathlib
import shutil


def separate_skipped(folder, printed):
    """`slicelab convert FOLDER` groups files by SeriesInstanceUID and skips a file whose size differs from the
    rest of its series; each file its output (`printed`) names as skipped moves into a folder of its own.
    Returns every folder to convert, `folder` first."""
    folders = [folder]
    for line in printed.splitlines():
        if line.startswith("skipped "):
            skipped = pathlib.Path(line[len("skipped "):].split(": ", 1)[0])
            own = folder.parent / f"{folder.name}-{len(folders)}"
            own.mkdir()
            shutil.move(skipped, own / skipped.name)
            folders.append(own)
    return folders
