"""Which Zenoh probe measures: the native one or the Python reference.

``LINKLAB_ZENOH_PROBE`` chooses, for the commands that start a Zenoh probe on this
machine's hosts (``linklab bench``, ``linklab drive``; the Kubernetes image carries the
Python probe, linklab.k8s.image):

- ``native`` (the default): ``linklab-probe-zenoh`` built from probes/zenoh (Rust, the
  zenoh 1.10.2 crate) into ``build/probe-zenoh/``, with ``linklab-bridge-zenoh`` (the
  DDS <-> Zenoh bridge, whichever probe is chosen); ``scripts/zenoh-probe-build.sh``
  builds it the first time it is needed (one progress line; minutes, once per machine:
  the build is cached in ``~/.cache/linklab/probe-zenoh``) and is a no-op after.
- ``python``: the Python probe (``linklab.probes.zenoh_probe``, the ``linklab-probe-zenoh``
  entry point of the venv): the reference the native one is checked against
  (tests/test_zenoh_native_probe.py), with CPython's own overhead.

Both take the same command line and write the same records and summary; the summary's
``version`` says which ran ("... (Rust probe)" / "... (Python probe)"). Any other value
is refused, and a native probe that cannot be built is an error naming the reason, not a
silent switch to Python.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from linklab.errors import EnvironmentProblem, UsageError

ENV = "LINKLAB_ZENOH_PROBE"
CHOICES = ("native", "python")
REPO = Path(__file__).resolve().parents[3]
NATIVE_BINARY = REPO / "build" / "probe-zenoh" / "linklab-probe-zenoh"
# the DDS <-> Zenoh bridge (seed 004 §3.1; middlewares zenoh-bridge, zenoh-router-bridge),
# built with the native probe, whichever probe LINKLAB_ZENOH_PROBE chooses
NATIVE_BRIDGE = REPO / "build" / "probe-zenoh" / "linklab-bridge-zenoh"
BUILD_SCRIPT = REPO / "scripts" / "zenoh-probe-build.sh"
ERROR_PREFIX = "[zenoh-probe] error: "


def zenoh_probe_choice() -> str:
    """``native`` or ``python``: LINKLAB_ZENOH_PROBE, native when unset or empty."""
    value = os.environ.get(ENV, "").strip() or "native"
    if value not in CHOICES:
        raise UsageError(f"expected one of {', '.join(CHOICES)}, got {value!r}", argument=ENV)
    return value


_checked: list[Path] = []  # the binary this process built or found current, once


def native_zenoh_probe() -> Path:
    """build/probe-zenoh/linklab-probe-zenoh, built now when it is missing or stale
    (the build script's progress line goes to stderr as it comes). The script runs once
    per process: every later probe of a run takes the binary it left."""
    if _checked and os.access(_checked[0], os.X_OK):
        return _checked[0]
    process = subprocess.Popen(["bash", str(BUILD_SCRIPT)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    problem = ""
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith(ERROR_PREFIX):
            problem = line[len(ERROR_PREFIX):].strip()
        else:
            sys.stderr.write(line)
            sys.stderr.flush()
    if process.wait() != 0 or not all(os.access(p, os.X_OK)
                                       for p in (NATIVE_BINARY, NATIVE_BRIDGE)):
        raise EnvironmentProblem(f"the native Zenoh probe could not be built: "
                                 f"{problem or f'{BUILD_SCRIPT.name} failed'}")
    _checked[:] = [NATIVE_BINARY]
    return NATIVE_BINARY


def native_zenoh_bridge() -> Path:
    """build/probe-zenoh/linklab-bridge-zenoh, built with the native probe."""
    native_zenoh_probe()
    return NATIVE_BRIDGE


def python_zenoh_probe() -> Path:
    """The Python probe's ``linklab-probe-zenoh`` entry point installed next to this Python."""
    candidate = Path(sys.executable).parent / "linklab-probe-zenoh"
    if candidate.exists():
        return candidate
    found = shutil.which("linklab-probe-zenoh")
    if found:
        return Path(found)
    raise EnvironmentProblem("linklab-probe-zenoh is not installed (run scripts/setup.sh: "
                             "pip install -e . provides it)")


def zenoh_probe_binary() -> Path:
    """The program the chosen Zenoh probe runs as."""
    return native_zenoh_probe() if zenoh_probe_choice() == "native" else python_zenoh_probe()


def zenoh_probe_argv() -> list[str]:
    """The chosen probe's argv prefix (the Python one through this interpreter)."""
    if zenoh_probe_choice() == "native":
        return [str(native_zenoh_probe())]
    return [sys.executable, "-m", "linklab.probes.zenoh_probe"]
