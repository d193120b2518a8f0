"""Reading a run archive (the .zip that RunStore.export_zip writes) without trusting it.

A run zip holds the files of one run folder (``run.json``, ``history.json``, ``config.json``,
``weights.safetensors``) and optionally its data set under ``dataset/``. :func:`read_run_zip`
returns only those members after refusing, with a sentence, anything that could harm the
machine: paths outside the archive, too many or too large members, and pickled models.
"""

from __future__ import annotations

import io
import zipfile
import zlib

from treeviz.data.dataset import ARRAYS, DATASET_JSON
from treeviz.errors import TreevizError

RUN_JSON, HISTORY_JSON = "run.json", "history.json"
CONFIG_JSON, WEIGHTS = "config.json", "weights.safetensors"
DATASET_PREFIX = "dataset/"
#: Import limits: total unpacked bytes, and number of members, of a run zip.
MAX_IMPORT_BYTES = 1024**3
MAX_IMPORT_MEMBERS = 32
PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib", ".pt", ".pth", ".sav", ".dill")


def read_run_zip(data: bytes) -> dict[str, bytes]:
    """The members of a run zip, checked for traversal, size and pickles."""
    allowed = (RUN_JSON, HISTORY_JSON, CONFIG_JSON, WEIGHTS, DATASET_PREFIX + DATASET_JSON, DATASET_PREFIX + ARRAYS)
    try:
        zf = zipfile.ZipFile(io.BytesIO(bytes(data)))
    except (zipfile.BadZipFile, ValueError):
        raise TreevizError("This file is not a zip archive; a treeviz run export is a .zip file.") from None
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > MAX_IMPORT_MEMBERS:
            raise TreevizError(f"This zip has {len(infos)} files, too many for a treeviz run; it was refused.")
        for info in infos:
            name = info.filename
            parts = name.replace("\\", "/").split("/")
            if name.startswith(("/", "\\")) or "\\" in name or ":" in name or ".." in parts:
                raise TreevizError(
                    f"The zip member {name!r} points outside the archive, so the file was refused."
                )
        if sum(i.file_size for i in infos) > MAX_IMPORT_BYTES:
            raise TreevizError(
                f"This zip unpacks to more than {MAX_IMPORT_BYTES / 1024**2:.0f} MiB, too large "
                "for a treeviz run; it was refused."
            )
        by_name = {i.filename: i for i in infos}
        tops = {n.split("/", 1)[0] for n in by_name}
        if RUN_JSON not in by_name and len(tops) == 1 and all("/" in n for n in by_name):
            top = tops.pop() + "/"  # zipped a whole folder: look inside it
            by_name = {n[len(top):]: i for n, i in by_name.items()}
        missing = [n for n in (RUN_JSON, CONFIG_JSON, WEIGHTS) if n not in by_name]
        if missing:
            pickles = [n for n in by_name if n.lower().endswith(PICKLE_SUFFIXES)]
            if pickles:
                raise TreevizError(
                    f"This zip holds a pickled model ({pickles[0]}), which treeviz never opens "
                    "because a pickle can run code; export the run from treeviz instead."
                )
            if RUN_JSON in missing and CONFIG_JSON in by_name and WEIGHTS in by_name:
                raise TreevizError(
                    "This zip is a model file without a run record; open it with "
                    "models.persist.load_model instead of importing it as a run."
                )
            raise TreevizError(f"This zip is not a treeviz run export: it lacks {', '.join(missing)}.")
        try:
            return {n: zf.read(by_name[n]) for n in allowed if n in by_name}
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, zlib.error) as err:
            raise TreevizError(f"This zip is damaged ({err}); export the run again.") from None
