"""The supervisor that runs a cell's probes inside a pod, and the bundle it leaves.

Standard library only: this file is copied into the linklab probe image as
``/opt/linklab/podrun.py`` and is the entry point of every linklab container
(``python3 /opt/linklab/podrun.py``). It reads its plan from the environment variable
``LINKLAB_POD_SPEC`` (JSON, written by linklab.k8s.manifests)::

    {"version": 1, "container": NAME, "deadline_s": S, "settle_s": S, "broker_linger_s": S,
     "records_dir": "/records", "await_containers": [NAME, ...],
     "peer_containers": [NAME, ...],
     "processes": [{"name": "sub", "role": "sub", "argv": [...],
                    "wait_tcp": "10.1.2.3:1883" | null, "delay_s": 0.3}, ...]}

and does, for its processes, what the bench runner does for local ones
(linklab.bench.probe_driver / cellrun): starts them in order (a client waits until its
broker accepts connections), reaps each with ``wait4`` (CPU seconds from the kernel's
rusage), samples each one's peak RSS (VmHWM) while it runs, and stops them with SIGINT
(then SIGKILL) when the other side has finished (``settle_s``), at its deadline, or
when the pod is deleted (SIGTERM); a broker alone in its container is stopped
``broker_linger_s`` after the pod's other containers (``await_containers``) are done,
and every container stops when a probe of another container of its pod
(``peer_containers``: they share the records directory) ended with an error.
It snapshots the pod's UDP counters and interface statistics before and after, and
records the clock (boot id, CLOCK_REALTIME and CLOCK_MONOTONIC), so probes on different
nodes can be put on one time line.

At the end it prints one **bundle** on stdout, between marker lines: a base64 tar.gz of
its processes' files (``NAME.bin`` records, ``NAME.out`` stdout, ``NAME.log`` stderr,
``NAME.json`` exit/CPU/RSS) and ``pod-CONTAINER.json``. linklab reads it back through the
pod log (collect.py): the one channel every conformant cluster offers without a storage
class, a network path from the pods to linklab, or exec rights. The container exits
with the first non-zero exit status of its processes (a signal N as 128+N), so the pod
status itself shows a probe that failed.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import tarfile
import time
from pathlib import Path

SPEC_ENV = "LINKLAB_POD_SPEC"
BEGIN = "LINKLAB-BUNDLE-BEGIN"
END = "LINKLAB-BUNDLE-END"
FORMAT = 1
POLL_S = 0.1
STOP_WAIT_S = 5.0
LINE = 76


class BundleError(Exception):
    """A pod log holds no complete bundle (cut, absent or corrupt)."""


# --- what the supervisor measures ----------------------------------------------------

def clock() -> dict:
    try:
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot_id = None
    mono1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    real = time.clock_gettime_ns(time.CLOCK_REALTIME)
    mono2 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    return {"boot_id": boot_id, "realtime_ns": real, "monotonic_ns": (mono1 + mono2) // 2,
            "hostname": socket.gethostname()}


def counters() -> dict:
    """/proc/net/snmp (text) and every interface's byte/packet counters, MTU and address."""
    out: dict = {"snmp": None, "interfaces": {}}
    try:
        out["snmp"] = Path("/proc/net/snmp").read_text()
    except OSError:
        pass
    base = Path("/sys/class/net")
    for iface in sorted(p.name for p in base.iterdir()) if base.is_dir() else ():
        stats = {}
        for key in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets"):
            try:
                stats[key] = int((base / iface / "statistics" / key).read_text())
            except (OSError, ValueError):
                pass
        try:
            stats["mtu"] = int((base / iface / "mtu").read_text())
        except (OSError, ValueError):
            pass
        out["interfaces"][iface] = stats
    return out


def vm_hwm(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def wait_tcp(address: str, until: float) -> bool:
    host, _, port = address.rpartition(":")
    while time.monotonic() < until:
        try:
            with socket.create_connection((host, int(port)), timeout=1.0):
                return True
        except OSError:
            time.sleep(0.2)
    return False


# --- running ------------------------------------------------------------------------

class Proc:
    def __init__(self, spec: dict, records: Path):
        self.spec = spec
        self.name = spec["name"]
        self.role = spec.get("role", "probe")
        self.records = records
        self.popen: subprocess.Popen | None = None
        self.exit_code: int | None = None
        self.cpu_s: float | None = None
        self.rss: int | None = None
        self.signalled = False
        self.started: float | None = None
        self.ended: float | None = None
        self.error: str | None = None

    def start(self) -> None:
        with open(self.records / f"{self.name}.out", "wb") as out, \
                open(self.records / f"{self.name}.log", "wb") as err:
            try:
                self.popen = subprocess.Popen(self.spec["argv"], stdout=out, stderr=err,
                                              stdin=subprocess.DEVNULL)
            except OSError as error:
                self.error = f"cannot start {self.spec['argv'][0]}: {error.strerror or error}"
                self.exit_code = 127
                return
        self.started = time.monotonic()

    def poll(self) -> int | None:
        if self.exit_code is not None or self.popen is None:
            return self.exit_code
        try:
            pid, status, usage = os.wait4(self.popen.pid, os.WNOHANG)
        except ChildProcessError:
            return self.exit_code
        if pid == 0:
            hwm = vm_hwm(self.popen.pid)
            if hwm is not None:
                self.rss = max(self.rss or 0, hwm)
            return None
        self.exit_code = os.waitstatus_to_exitcode(status)
        self.popen.returncode = self.exit_code
        self.cpu_s = usage.ru_utime + usage.ru_stime
        self.ended = time.monotonic()
        return self.exit_code

    def signal(self, sig: int) -> None:
        if self.popen is not None and self.poll() is None:
            self.signalled = True
            try:
                os.kill(self.popen.pid, sig)
            except ProcessLookupError:
                pass

    def report(self) -> dict:
        return {"role": self.role, "exit_code": self.exit_code,
                "signalled_by_runner": self.signalled, "cpu_s": self.cpu_s,
                "rss_peak_bytes": self.rss,
                "wall_s": (self.ended or time.monotonic()) - (self.started or time.monotonic()),
                "start_error": self.error}


class Supervisor:
    def __init__(self, spec: dict):
        self.spec = spec
        self.records = Path(spec.get("records_dir", "/records"))
        self.records.mkdir(parents=True, exist_ok=True)
        self.procs = [Proc(p, self.records) for p in spec["processes"]]
        self.t0 = time.monotonic()
        self.deadline = self.t0 + float(spec.get("deadline_s", 600))
        self.stopping = False

    def on_term(self, signum, frame) -> None:  # noqa: ARG002 -- the pod is being deleted
        self.stopping = True

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self.on_term)
        signal.signal(signal.SIGINT, self.on_term)
        info: dict = {"container": self.spec.get("container"), "clock": clock(),
                      "before": counters(), "notes": []}
        for proc in self.procs:
            if self.stopping:
                break
            time.sleep(float(proc.spec.get("delay_s") or 0.0))
            target = proc.spec.get("wait_tcp")
            if target and not wait_tcp(target, min(self.deadline, time.monotonic() + 60)):
                info["notes"].append(f"{proc.name}: {target} did not accept connections")
            proc.start()
        self.watch()
        info["after"] = counters()
        info["clock_end"] = clock()
        info["processes"] = {p.name: p.report() for p in self.procs}
        for proc in self.procs:
            (self.records / f"{proc.name}.json").write_text(json.dumps(proc.report()) + "\n")
        name = f"pod-{self.spec.get('container') or 'main'}.json"
        (self.records / name).write_text(json.dumps(info) + "\n")
        files = [name] + [f"{p.name}.{ext}" for p in self.procs
                          for ext in ("bin", "out", "log", "json")]
        sys.stdout.flush()
        write_bundle(sys.stdout, self.records, files, self.spec.get("container") or "main")
        return exit_status([p.exit_code for p in self.procs])

    def watch(self) -> None:
        settle = float(self.spec.get("settle_s", 1.5))
        linger = float(self.spec.get("broker_linger_s", 3.0))
        clients = [p for p in self.procs if p.role != "broker"]
        brokers = [p for p in self.procs if p.role == "broker"]
        pubs = [p for p in clients if p.role == "pub"]
        subs = [p for p in clients if p.role == "sub"]
        # a broker alone in its container serves the other containers of the pod (they
        # share the records directory): it ends when they have written their pod file
        awaited = [self.records / f"pod-{c}.json" for c in self.spec.get("await_containers")
                   or ()]
        peers = [self.records / f"pod-{c}.json" for c in self.spec.get("peer_containers")
                 or ()]
        side_done: float | None = None
        clients_done: float | None = None
        while True:
            now = time.monotonic()
            codes = [p.poll() for p in self.procs]
            if all(c is not None for c in codes):
                return
            if self.stopping or now >= self.deadline:
                break
            if any(c not in (None, 0) for c in (p.poll() for p in clients)):
                break  # a crash: nothing more will arrive from it
            if peers and crashed(peers):
                break  # a crash in another container of the pod
            if (clients and all(p.poll() is not None for p in clients)) or \
                    (not clients and awaited and all(path.exists() for path in awaited)):
                clients_done = clients_done or now
                if not brokers or now - clients_done > linger:
                    break
            elif (pubs and all(p.poll() is not None for p in pubs)) or \
                    (subs and all(p.poll() is not None for p in subs)):
                side_done = side_done or now
                if now - side_done > settle:
                    break
            time.sleep(POLL_S)
        self.stop()

    def stop(self) -> None:
        for sig, wait in ((signal.SIGINT, STOP_WAIT_S), (signal.SIGKILL, STOP_WAIT_S)):
            for proc in self.procs:
                proc.signal(sig)
            end = time.monotonic() + wait
            while time.monotonic() < end and any(p.poll() is None for p in self.procs):
                time.sleep(0.05)


def crashed(pod_files: list[Path]) -> bool:
    """Did a process of another container of this pod (its pod file) exit non-zero?"""
    for path in pod_files:
        try:
            info = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        for report in (info.get("processes") or {}).values():
            if report.get("role") != "broker" and report.get("exit_code") not in (None, 0):
                return True
    return False


def exit_status(codes: list[int | None]) -> int:
    for code in codes:
        if code not in (None, 0):
            return 128 - code if code < 0 else min(int(code), 255)
    return 0


# --- the bundle ---------------------------------------------------------------------

def write_bundle(out, root: Path, names: list[str], container: str) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name in dict.fromkeys(names):
            path = root / name
            if path.is_file():
                tar.add(path, arcname=name)
    data = buffer.getvalue()
    text = base64.b64encode(data).decode()
    out.write(f"{BEGIN} {FORMAT} {container}\n")
    for i in range(0, len(text), LINE):
        out.write(text[i:i + LINE] + "\n")
    out.write(f"{END} {hashlib.sha256(data).hexdigest()} {len(data)}\n")
    out.flush()


def read_bundle(log: str) -> dict[str, bytes]:
    """The files of the bundle in a container's log (anything else in the log is ignored).
    Raises BundleError when there is none or it is cut or corrupt."""
    lines = log.splitlines()
    begins = [i for i, line in enumerate(lines) if line.startswith(BEGIN + " ")]
    if not begins:
        raise BundleError("no linklab bundle in the container log (the container did not "
                          "reach its end, or this is not a linklab probe image)")
    start = begins[-1]
    ends = [i for i in range(start + 1, len(lines)) if lines[i].startswith(END + " ")]
    if not ends:
        raise BundleError("the bundle in the container log is cut (the log was rotated or "
                          "truncated: kubelet containerLogMaxSize)")
    parts = lines[ends[0]].split()
    data = base64.b64decode("".join(lines[start + 1:ends[0]]))
    if len(parts) < 3 or hashlib.sha256(data).hexdigest() != parts[1] \
            or len(data) != int(parts[2]):
        raise BundleError("the bundle in the container log is corrupt (checksum differs)")
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            if member.isfile() and "/" not in member.name and not member.name.startswith("."):
                handle = tar.extractfile(member)
                if handle is not None:
                    files[member.name] = handle.read()
    return files


def main() -> int:
    raw = os.environ.get(SPEC_ENV)
    if not raw:
        print(f"podrun: {SPEC_ENV} is not set (the linklab pod spec)", file=sys.stderr)
        return 2
    try:
        spec = json.loads(raw)
    except ValueError as error:
        print(f"podrun: {SPEC_ENV} is not JSON: {error}", file=sys.stderr)
        return 2
    if spec.get("version") != FORMAT:
        print(f"podrun: spec version {spec.get('version')!r}, this image runs {FORMAT}",
              file=sys.stderr)
        return 2
    return Supervisor(spec).run()


if __name__ == "__main__":
    sys.exit(main())
