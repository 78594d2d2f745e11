"""What a run was measured with: linklab (and its git commit), the kernel, Python and
every middleware package (run.json ``versions``, each session's too)."""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from linklab import __version__

# Debian packages whose versions a run records.
PACKAGES = ("libfastrtps-dev", "fastdds-tools", "libfastcdr-dev", "cyclonedds-dev",
            "cyclonedds-tools", "mosquitto", "libmosquitto-dev", "nftables", "iproute2")
PYTHON_PACKAGES = ("cyclonedds", "eclipse-zenoh", "paho-mqtt")


def collect_versions(repo: Path | None = None) -> dict[str, Any]:
    """Versions of linklab (and its git commit), the kernel and every middleware."""
    versions: dict[str, Any] = {"linklab": __version__, "kernel": platform.release(),
                                "python": platform.python_version()}
    repo = repo or Path(__file__).resolve().parents[3]
    try:
        commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"],
                                capture_output=True, text=True, timeout=10)
        versions["git_commit"] = commit.stdout.strip() or None
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
        versions["git_dirty"] = bool(dirty.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        versions["git_commit"] = None
    for package in PACKAGES:
        try:
            out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package],
                                 capture_output=True, text=True, timeout=10)
            versions[package] = out.stdout.strip() if out.returncode == 0 else None
        except (OSError, subprocess.SubprocessError):
            versions[package] = None
    for package in PYTHON_PACKAGES:
        try:
            versions[f"python:{package}"] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[f"python:{package}"] = None
    return versions


def measured_with(info: dict[str, Any]) -> str:
    """The commit(s) a run's cells were measured at, for a report's header: "commit X",
    or, for a run resumed at other commits or on other machines, every distinct one in
    order with the number of sessions and machines."""
    sessions = [s for s in info.get("sessions") or [] if isinstance(s, dict)]
    first = info.get("versions") or {}

    def commit(versions: dict[str, Any]) -> str:
        text = str(versions.get("git_commit") or "?")[:10]
        return text + (" (dirty)" if versions.get("git_dirty") else "")

    commits = list(dict.fromkeys(commit(s.get("versions") or {}) for s in sessions)) \
        or [commit(first)]
    hosts = {s.get("host") for s in sessions if s.get("host")}
    if len(sessions) < 2:
        return f"commit {commits[0]}"
    where = f", {len(hosts)} machines" if len(hosts) > 1 else ""
    label = "commit" if len(commits) == 1 else "commits"
    return f"{label} {', '.join(commits)} ({len(sessions)} sessions{where})"
