"""The linklab probe image, assembled offline from this machine's files (no base image).

Contents (``linklab k8s image build``):

- /opt/linklab/bin: the built C++ probes (build/probes: Fast DDS, Cyclone DDS, MQTT) and
  ``linklab-probe-zenoh`` (the Python probe), /usr/sbin/mosquitto (the MQTT broker);
- /opt/linklab/podrun.py (the supervisor every container runs, linklab.k8s.podrun) and
  /opt/linklab/python: the linklab package and the Python packages the Zenoh probe and
  router import (eclipse-zenoh, numpy, psutil), from the project's .venv;
- /usr/bin/python3.11 with its standard library (tests, idle, tkinter left out);
- every shared library these load (``ldd``, at their merged-/usr paths, with the
  dynamic loader), a static busybox for a shell, /etc/passwd and /etc/group (mosquitto
  looks its user up), /tmp.

buildah builds it from ``scratch`` and commits it to local containers-storage (podman
sees it), optionally also as an OCI archive for ``ctr images import``, ``kind load
image-archive`` or ``k3s ctr images import``; ``push`` sends it to a registry.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from linklab.errors import EnvironmentProblem, UsageError
from linklab.middleware import BUILT_PROBES

REPO = Path(__file__).resolve().parents[3]
PROBES = BUILT_PROBES  # the C++ probes (linklab.middleware.families)
STDLIB_SKIP = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3",
               "pydoc_data", "unittest", "config-3.11-x86_64-linux-gnu"}
SITE_PACKAGES = ("zenoh", "numpy", "numpy.libs", "psutil")
BUSYBOX_LINKS = ("sh", "ls", "cat", "ps", "env", "sleep", "mkdir", "ip", "id", "grep")
ZENOH_WRAPPER = """#!/usr/bin/python3
import sys
from linklab.probes.zenoh_probe import main
sys.exit(main())
"""


def _run(argv: list[str], what: str) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    except FileNotFoundError:
        raise EnvironmentProblem(f"{argv[0]} is not installed (Debian {argv[0]}; "
                                 "scripts/setup.sh installs it)") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["?"]
        raise EnvironmentProblem(f"{what}: {argv[0]} exited {done.returncode}: {tail[0]}")
    return done.stdout


def shared_libraries(paths: list[Path]) -> set[Path]:
    """Every library ``ldd`` resolves for these ELF files, and the dynamic loader."""
    out: set[Path] = set()
    for path in paths:
        done = subprocess.run(["ldd", str(path)], capture_output=True, text=True)
        if done.returncode != 0:
            continue  # not dynamic (static, or a script)
        for line in done.stdout.splitlines():
            if "not found" in line:
                raise EnvironmentProblem(f"{path}: {line.strip()}")
            match = re.search(r"=>\s+(/\S+)", line) or re.match(r"\s*(/\S+)\s+\(", line)
            if match:
                out.add(Path(match[1]))
    return out


def _place(root: Path, source: Path, target: str | None = None) -> None:
    """Copy ``source`` (dereferenced) to its merged-/usr path (or ``target``) in root."""
    if target is None:
        parent = Path(os.path.realpath(source.parent))
        target = str(parent / source.name)
    dest = root / target.lstrip("/")
    dest.parent.mkdir(parents=True, exist_ok=True)
    if not dest.exists():
        shutil.copy2(os.path.realpath(source), dest)


def _elf_files(directory: Path) -> list[Path]:
    return [p for p in directory.rglob("*.so*") if p.is_file()]


def assemble(root: Path) -> None:
    """The image's root filesystem in ``root`` (see module doc)."""
    for name in ("usr/bin", "usr/sbin", "usr/lib", "usr/lib64", "etc/linklab/cell", "records",
                 "opt/linklab/bin", "opt/linklab/python"):
        (root / name).mkdir(parents=True, exist_ok=True)
    for link, target in (("bin", "usr/bin"), ("sbin", "usr/sbin"), ("lib", "usr/lib"),
                         ("lib64", "usr/lib64")):
        (root / link).symlink_to(target)
    tmp = root / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777 | stat.S_IFDIR)
    elves: list[Path] = []
    for probe in PROBES:
        found = sorted((REPO / "build" / "probes").rglob(f"linklab-probe-{probe}"))
        if not found:
            raise EnvironmentProblem(f"linklab-probe-{probe} is not built: run scripts/setup.sh")
        _place(root, found[0], f"/opt/linklab/bin/linklab-probe-{probe}")
        elves.append(found[0])
    for tool in ("/usr/sbin/mosquitto", "/usr/bin/python3.11"):
        if not Path(tool).exists():
            raise EnvironmentProblem(f"{tool} is missing (scripts/setup.sh)")
        _place(root, Path(tool), tool)
        elves.append(Path(tool))
    (root / "usr/bin/python3").symlink_to("python3.11")
    stdlib = Path("/usr/lib/python3.11")
    shutil.copytree(stdlib, root / "usr/lib/python3.11", symlinks=False,
                    ignore=lambda d, names: [n for n in names if n in STDLIB_SKIP
                                             or n == "dist-packages"])
    elves += _elf_files(stdlib / "lib-dynload")
    site = Path(sys.prefix) / "lib" / "python3.11" / "site-packages"
    for package in SITE_PACKAGES:
        if not (site / package).exists():
            raise EnvironmentProblem(f"{site / package} is missing (scripts/setup.sh)")
        shutil.copytree(site / package, root / "opt/linklab/python" / package,
                        ignore=shutil.ignore_patterns("tests", "__pycache__"))
        elves += _elf_files(site / package)
    shutil.copytree(REPO / "src" / "linklab", root / "opt/linklab/python/linklab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO / "src" / "linklab" / "k8s" / "podrun.py", root / "opt/linklab/podrun.py")
    wrapper = root / "opt/linklab/bin/linklab-probe-zenoh"
    wrapper.write_text(ZENOH_WRAPPER)
    wrapper.chmod(0o755)
    for lib in sorted(shared_libraries(elves)):
        _place(root, lib)
    busybox = Path("/bin/busybox")
    if not busybox.exists():
        raise EnvironmentProblem("/bin/busybox is missing (Debian busybox-static)")
    _place(root, busybox, "/usr/bin/busybox")
    for name in BUSYBOX_LINKS:
        if not (root / "usr/bin" / name).exists():
            (root / "usr/bin" / name).symlink_to("busybox")
    (root / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/sh\n"
                                     "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")
    (root / "etc/group").write_text("root:x:0:\nnogroup:x:65534:\n")
    (root / "etc/nsswitch.conf").write_text("passwd: files\ngroup: files\nhosts: files dns\n")


def build(tag: str, archive: Path | None = None) -> None:
    if not re.fullmatch(r"[a-z0-9][a-z0-9._/:-]*(@sha256:[0-9a-f]{64})?", tag):
        raise UsageError(f"{tag!r} is not an image reference (registry/name:tag)",
                         argument="--tag")
    with tempfile.TemporaryDirectory(prefix="linklab-image-") as tmp:
        root = Path(tmp) / "rootfs"
        root.mkdir()
        assemble(root)
        container = _run(["buildah", "from", "scratch"], "buildah from").strip()
        try:
            _run(["buildah", "copy", "--quiet", container, f"{root}/", "/"], "buildah copy")
            _run(["buildah", "config",
                  "--env", "PATH=/opt/linklab/bin:/usr/sbin:/usr/bin",
                  "--env", "PYTHONPATH=/opt/linklab/python",
                  "--env", "PYTHONDONTWRITEBYTECODE=1",
                  "--entrypoint", "[]", "--cmd", "python3 /opt/linklab/podrun.py",
                  "--workingdir", "/", "--label", "org.opencontainers.image.title=linklab-probe",
                  "--label", "org.opencontainers.image.source=linklab", container],
                 "buildah config")
            _run(["buildah", "commit", "--quiet", "--rm", container, tag], "buildah commit")
        except BaseException:
            subprocess.run(["buildah", "rm", container], capture_output=True)
            raise
    if archive is not None:
        archive.unlink(missing_ok=True)
        _run(["buildah", "push", "--quiet", tag, f"oci-archive:{archive}:{tag}"],
             "buildah push (archive)")


def push(tag: str, destination: str, tls_verify: bool = True) -> None:
    if "/" not in destination:
        raise UsageError(f"{destination!r}: give REGISTRY/NAME:TAG", argument="DESTINATION")
    _run(["buildah", "push", f"--tls-verify={'true' if tls_verify else 'false'}", tag,
          f"docker://{destination}"], "buildah push")
