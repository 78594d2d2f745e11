"""Where the built probe binaries are."""

from __future__ import annotations

import os
from pathlib import Path

from linklab.errors import EnvironmentProblem, UsageError
from linklab.middleware import BUILT_PROBES

REPO = Path(__file__).resolve().parents[3]
BUILD_DIR = REPO / "build" / "probes"
MIDDLEWARES = BUILT_PROBES  # the C++ probes (linklab.middleware.families)


def binary_path(middleware: str, build_dir: Path | None = None) -> Path:
    """``build/probes/<mw>/linklab-probe-<mw>``; raises if unknown or not built."""
    if middleware not in MIDDLEWARES:
        raise UsageError(f"unknown probe {middleware!r}; expected one of {', '.join(MIDDLEWARES)}",
                         argument="middleware")
    base = build_dir or Path(os.environ.get("LINKLAB_PROBES_DIR", BUILD_DIR))
    path = base / middleware / f"linklab-probe-{middleware}"
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise EnvironmentProblem(f"linklab-probe-{middleware} is not built ({path} missing): "
                                 "run scripts/setup.sh")
    return path


def bridge_path(bridge: str, build_dir: Path | None = None) -> Path:
    """``build/probes/cyclonedds/linklab-bridge-<bridge>`` (a bridged middleware's bridge,
    built beside the Cyclone DDS probe whose types it carries); raises if not built."""
    base = build_dir or Path(os.environ.get("LINKLAB_PROBES_DIR", BUILD_DIR))
    path = base / "cyclonedds" / f"linklab-bridge-{bridge}"
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise EnvironmentProblem(f"linklab-bridge-{bridge} is not built ({path} missing): "
                                 "run scripts/setup.sh")
    return path
