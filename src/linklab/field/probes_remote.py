"""The probes on the hosts of a field run: the very build linklab runs here, or none.

A host may have the probe installed (``linklab-probe-<mw>`` on its PATH): it is used when
its SHA-256 is the local build's (same source, same toolchain: the same probe). Otherwise
the local build is copied into the run's work directory and started once with ``--help``
to prove it loads there (its middleware libraries: Fast DDS 2.9, Cyclone DDS 0.10); a
probe that cannot run is an error naming the missing libraries, before any cell runs.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from linklab.errors import EnvironmentProblem
from linklab.field.shell import Host


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def install(host: Host, local: Path) -> dict[str, Any]:
    """{"path": where the probe is on ``host``, "sha256", "how"}."""
    digest = sha256(local)
    if not host.spec.remote:
        return {"path": str(local), "sha256": digest, "how": "this machine's build"}
    name = local.name
    found = host.run(["sh", "-c", f'p=$(command -v {name}) && sha256sum "$p"'], check=False)
    words = found.stdout.decode(errors="replace").split()
    if found.returncode == 0 and len(words) >= 2 and words[0] == digest:
        return {"path": words[1], "sha256": digest, "how": f"installed on the host ({words[1]}), "
                                                           "the same build"}
    target = host.path("probes", name)
    host.run(["mkdir", "-p", host.path("probes")])
    host.put(local.read_bytes(), target, 0o755)
    check = host.run([target, "--help"], check=False)
    if check.returncode != 0:
        missing = host.run(["sh", "-c", f"ldd {target} 2>&1 | grep 'not found'"], check=False)
        libs = [line.split()[0] for line in missing.stdout.decode().splitlines() if line.strip()]
        other = ("" if found.returncode != 0 else
                 f"; its own {words[1] if len(words) > 1 else name} is another build")
        raise EnvironmentProblem(
            f"{host.name}: {name} built here does not run on {host.spec.text}"
            + (f" (missing: {', '.join(libs[:4])})" if libs else
               f" (exit {check.returncode})") + other
            + "; install the same middleware there (Debian 12: scripts/setup.sh) or build "
              "linklab's probes on the host")
    how = "copied from this machine" + (" (the host's own is another build)"
                                        if found.returncode == 0 else "")
    return {"path": target, "sha256": digest, "how": how}
