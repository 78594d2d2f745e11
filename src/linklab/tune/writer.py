"""The one side effect of the tuner: writing the two profile files."""

from __future__ import annotations

import os
from pathlib import Path

from linklab.errors import UsageError
from linklab.held_signals import signals_held
from linklab.tune.result import TuningResult

FASTDDS_FILE = "fastdds.xml"
CYCLONEDDS_FILE = "cyclonedds.xml"


def write_profiles(result: TuningResult, out_dir: str | os.PathLike) -> dict[str, Path]:
    """Write ``fastdds.xml`` and ``cyclonedds.xml`` into ``out_dir`` (created if needed).

    Each file is written to a temporary name and renamed, so a reader never sees half a
    profile; SIGINT/SIGTERM/SIGHUP meanwhile take effect once both are there, so an
    interrupted tune leaves both profiles or neither. Returns {"fastdds": path,
    "cyclonedds": path} (absolute paths).
    """
    directory = Path(out_dir).expanduser().resolve()
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{directory} exists and is not a directory", argument="--out")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        paths = {"fastdds": directory / FASTDDS_FILE, "cyclonedds": directory / CYCLONEDDS_FILE}
        with signals_held():
            for key, text in (("fastdds", result.fastdds_xml),
                              ("cyclonedds", result.cyclonedds_xml)):
                tmp = paths[key].with_suffix(".xml.tmp")
                tmp.write_text(text, encoding="utf-8")
                tmp.replace(paths[key])
    except OSError as error:
        raise UsageError(f"cannot write profiles into {directory}: {error.strerror}",
                         argument="--out") from error
    return paths
