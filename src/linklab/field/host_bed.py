"""One cell on real hosts: bench.runner's Bed for the field environment.

- ``spawn(host, argv, ...)``: a probe on its host. On ``local``/``netns:`` hosts it is
  started directly. On a remote host the argv is rewritten (the probe binary, ``--records``
  and ``--profile`` point into the host's work directory; the profile is copied there)
  and the runner gets a local relay (relay.py) that runs it through procwrap.py over the
  host's SSH connection: stopped with SIGINT, reaped with wait4, like a local probe.
  The discovery gate's ready and start files move into that directory too, and the gate
  reaches them through the host's agent (``gate_files``, gate_files.py).
- ``begin`` (before the probes start) and the last ``snapshot`` (after every probe ended)
  measure the clock offsets between the reference host and the cell's hosts (clock.py).
  At that last snapshot the remote records (and each remote probe's own CPU and peak RSS,
  ``usage-<name>.json``) are brought into the cell's directory and every record file is
  put on the reference clock (records.py); ``clock.json`` says how, per stream.
- ``snapshot``: byte counters of each host's interface towards the others and its UDP
  counters (/proc/net/snmp), through the agents.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from linklab.field import clock as C
from linklab.field import records as R
from linklab.field.gate_files import HostFiles

RELAY = str(Path(__file__).with_name("relay.py"))


class RemotePopen(subprocess.Popen):
    """The relay of a remote probe. The relay's own CPU and memory are not the probe's:
    ``remote_usage()`` gives the probe's (wait4 and VmHWM on its host, procwrap.py), once
    the cell's records are back (None before)."""

    usage_path: Path | None = None

    def remote_usage(self) -> dict[str, Any] | None:
        if self.usage_path is None or not self.usage_path.exists():
            return None
        return json.loads(self.usage_path.read_text())


@dataclass
class Spawned:
    host: str
    role: str
    topic: str
    name: str                    # file stem in the cell directory
    records: Path                # the local record file (where the runner reads it)
    remote_records: str | None   # on the host (None: written locally)
    remote_usage: str | None
    popen: subprocess.Popen
    workdir: str | None          # the probe's directory on its host (None: local)


def _flag(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv and argv.index(flag) + 1 < len(argv) \
        else None


class FieldBed:
    outage_s = 0.0
    shares_local_clock = False  # probes on other machines: their own clocks
    applies_cpu = False   # no competitors or quotas on the user's machines
    runs_cells_whole = False

    def __init__(self, env: Any, cell: Any):
        self.env = env
        self.cell = cell
        self.hosts = env.hosts
        self.spawned: list[Spawned] = []
        self.names = sorted({t.publisher for t in cell.topics}
                            | {h for t in cell.topics for h in t.subscribers})
        self.before: dict[str, tuple[int, C.Offset]] = {}
        self.after: dict[str, tuple[int, C.Offset]] = {}
        self.finished = False
        self.counter = 0
        self.profiles: dict[tuple[str, str], str] = {}
        self.gate_files = HostFiles()   # bench.discovery_gate: remote probes' ready/start

    # --- clocks ------------------------------------------------------------------------

    def _offsets(self) -> dict[str, tuple[int, C.Offset]]:
        """For each host of the cell: (when, clock(host) - clock(anchor)); the anchor of the
        reference host is this machine's clock (an exact 0 when it is local)."""
        ref = self.env.reference
        anchor = self._anchor()
        out: dict[str, tuple[int, C.Offset]] = {}
        for name in self.names + ([ref] if ref.startswith("_") else []):
            if name == anchor:
                out[name] = (time.monotonic_ns(), C.Offset(0.0, 0.0, 0.0, 0.0, 0, "reference"))
                continue
            out[name] = (time.monotonic_ns(), self.hosts.offset(anchor, name))
        return out

    def _anchor(self) -> str:
        """The host the others' offsets are measured from: the local one, or else the
        first of the cell's hosts (over the data path); its own offset to this machine
        comes from the agent here (it only places the cell in the runner's time)."""
        ref = self.env.reference
        return ref if not ref.startswith("_") else self.names[0]

    def begin(self) -> None:
        self.before = self._offsets()

    def reference_offset(self, name: str, when: str = "before") -> float:
        """reference(this machine) - host, in ns, from one set of measurements."""
        table = self.before if when == "before" else (self.after or self.before)
        ref = self.env.reference
        anchor_to_ref = 0.0
        if ref.startswith("_") and ref in table:
            anchor_to_ref = table[ref][1].offset_ns   # clock(_here) - clock(anchor)
        return anchor_to_ref - table[name][1].offset_ns

    def offset_function(self, name: str):
        """host time (ns) -> reference - host (ns), linear between before and after; None
        when the host is the reference clock itself (nothing to correct)."""
        if not self.before:
            return None
        o0 = self.reference_offset(name, "before")
        o1 = self.reference_offset(name, "after")
        unc = self.uncertainty(name)
        if o0 == 0 and o1 == 0 and unc == 0:
            return None
        t0 = self.before[name][0] - o0
        t1 = (self.after.get(name) or self.before[name])[0] - o1
        drift = C.Drift(int(t0), o0, int(t1), o1, unc)
        return drift.at

    def uncertainty(self, name: str) -> float:
        values = [table[name][1].uncertainty_ns for table in (self.before, self.after)
                  if name in table]
        return max(values) if values else math.inf

    # --- processes ---------------------------------------------------------------------

    def spawn(self, host: str, argv: list[str], stdout: Any, stderr: Any) -> subprocess.Popen:
        item = self.hosts[host]
        role = argv[1] if len(argv) > 1 else "?"
        topic = _flag(argv, "--topic") or ""
        records = Path(_flag(argv, "--records") or "")
        name = records.stem
        if not item.spec.remote:
            popen = item.host.popen(argv, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL)
            self.spawned.append(Spawned(host, role, topic, name, records, None, None, popen,
                                        None))
            return popen
        self.counter += 1
        where = item.host.path("cells", f"{id(self):x}-{self.counter}")
        item.host.run(["mkdir", "-p", where])
        remote = list(argv)
        remote[0] = self.env.probes[(host, self.cell.middleware)]["path"]
        remote[remote.index("--records") + 1] = f"{where}/{records.name}"
        for flag in ("--ready-file", "--start-file"):   # the discovery gate's files
            if flag in remote:
                local = Path(_flag(argv, flag) or "")
                remote[remote.index(flag) + 1] = f"{where}/{local.name}"
                self.gate_files.place(local, item, f"{where}/{local.name}")
        if "--profile" in remote:
            remote[remote.index("--profile") + 1] = self._profile(item, Path(
                _flag(argv, "--profile") or ""))
        usage = f"{where}/{name}.usage.json"
        command = ["python3", item.host.path("procwrap.py"), "run", "--usage", usage,
                   "--pids", item.host.path("pids"), "--", *remote]
        popen = RemotePopen([sys.executable, RELAY, "--", *item.host.argv(command)],
                            stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
                            start_new_session=True,
                            env={**os.environ, "LINKLAB_RELAY_PARENT": str(os.getpid())})
        popen.usage_path = records.with_name(f"usage-{name}.json")
        self.spawned.append(Spawned(host, role, topic, name, records,
                                    f"{where}/{records.name}", usage, popen, where))
        return popen

    def _profile(self, item: Any, local: Path) -> str:
        data = local.read_bytes()
        key = (item.name, hashlib.sha256(data).hexdigest()[:16])
        copied = self.env.copied_profiles
        if key not in copied:
            path = item.host.path("profiles", f"{key[1]}-{local.name}")
            item.host.run(["mkdir", "-p", item.host.path("profiles")])
            item.host.put(data, path)
            copied[key] = path
        return copied[key]

    def address(self, host: str) -> str | None:
        return self.hosts[host].address

    def host(self, name: str) -> Any:
        return SimpleNamespace(netns=None, address=self.hosts[name].address, name=name)

    def interface(self, host: str) -> str | None:
        return None

    def start_traffic(self, first_sample_in_s: float) -> None:
        return None

    def outage_on_ns(self) -> int | None:
        return None

    def dark_windows_ns(self) -> list[tuple[int, int | None]]:
        return []  # no declared outage: the real network is what it is

    def row_fields(self) -> dict[str, Any]:
        """Columns for the cell's row, once the cell is over (for a runner that merges a
        bed's own columns): the latency basis and the clock's uncertainty."""
        path = next((s.records.parent / "clock.json" for s in self.spawned), None)
        if path is None or not path.exists():
            return {}
        clock = json.loads(path.read_text())
        streams = clock.get("streams") or []
        return {"latency_basis": clock.get("basis"),
                "clock_uncertainty_ms": max((x["uncertainty_ms"] for x in streams),
                                            default=math.nan),
                "path_rtt_ms": max((x["path_rtt_ms"] or math.nan for x in streams),
                                   default=math.nan)}

    def stages(self) -> dict[str, Any]:
        return {"preset": self.cell.link, **self.env.description()}

    # --- counters, and the end of the cell ---------------------------------------------

    def snapshot(self, hosts: tuple[str, ...] = ()) -> dict[str, Any]:
        if self.spawned and not self.finished and all(
                s.popen.returncode is not None for s in self.spawned):
            self.finish()   # every probe has ended (the runner reaped them): the cell is over
        interfaces, udp = {}, {}
        for name in self.names:
            item = self.hosts[name]
            device = item.route.get("device")
            got = item.agent.call("counters", devices=[device] if device else [])
            interfaces[name] = got["interfaces"]
            udp[name] = got["udp"]
        return {"link": {"interfaces": interfaces, "stages": []}, "udp": udp}

    def finish(self) -> None:
        self.finished = True
        self.after = self._offsets()
        pub_host = {s.topic: s.host for s in self.spawned if s.role == "pub"}
        for s in self.spawned:
            if s.remote_records is not None:
                self._fetch(s)
        for s in self.spawned:
            if not s.records.exists():
                continue
            own = self.offset_function(s.host)
            sender = own if s.role == "pub" else self.offset_function(pub_host.get(s.topic,
                                                                                   s.host))
            R.to_reference(s.records, s.role, own, sender)
        self._write_clock(pub_host)

    def _fetch(self, s: Spawned) -> None:
        """Bring a remote probe's records and usage here, then remove its directory there
        (with the discovery gate's files)."""
        host = self.hosts[s.host].host
        for remote, local in ((s.remote_records, s.records),
                              (s.remote_usage, s.records.with_name(f"usage-{s.name}.json"))):
            if remote is None:
                continue
            got = host.run(["sh", "-c", f"cat {shlex.quote(remote)} 2>/dev/null || true"],
                           timeout=120)
            if got.stdout:
                local.write_bytes(got.stdout)
        if s.workdir is not None:
            host.run(["rm", "-rf", s.workdir], check=False)

    def _write_clock(self, pub_host: dict[str, str]) -> None:
        """records/<cell>/clock.json: how each stream's latency was put on one clock."""
        out_dir = next((s.records.parent for s in self.spawned), None)
        if out_dir is None:
            return
        streams = []
        for s in self.spawned:
            if s.role != "sub" or not s.records.exists():
                continue
            publisher = pub_host.get(s.topic, s.host)
            unc = 0.0 if publisher == s.host else (
                self.uncertainty(publisher) + self.uncertainty(s.host))
            lat = R.latencies_ms(s.records)
            median = float(np.median(lat)) if lat.size else math.nan
            basis = "one-way" if publisher == s.host else C.basis(unc, median * 1e6)
            rtt = self._path_rtt_ms(publisher, s.host)
            streams.append({"topic": s.topic, "publisher": publisher, "subscriber": s.host,
                            "endpoint": s.name, "basis": basis,
                            "uncertainty_ms": unc / 1e6, "latency_median_ms": median,
                            "path_rtt_ms": rtt,
                            "note": _basis_note(basis, unc, median, rtt)})
        hosts = {}
        for name in self.before:
            b, a = self.before[name][1], (self.after.get(name) or self.before[name])[1]
            span = (self.after.get(name) or self.before[name])[0] - self.before[name][0]
            ppm = (a.offset_ns - b.offset_ns) / span * 1e6 if span else 0.0
            hosts[name] = {"before": b.to_dict(), "after": a.to_dict(),
                           "reference_minus_host_ns": self.reference_offset(name),
                           "drift_ppm": ppm}
        worst = "round-trip" if any(x["basis"] == "round-trip" for x in streams) else "one-way"
        usage = {}
        for s in self.spawned:
            path = s.records.with_name(f"usage-{s.name}.json")
            if path.exists():
                usage[s.name] = json.loads(path.read_text())
        document = {
            "reference": self.env.reference, "anchor": self._anchor(), "basis": worst,
            "one_way_share": C.ONE_WAY_SHARE, "hosts": hosts, "streams": streams,
            "remote_usage": usage,
            "note": ("records are on the clock of this machine (CLOCK_MONOTONIC); the files "
                     "as recorded on each host are in field/"),
        }
        (out_dir / "clock.json").write_text(json.dumps(document, indent=1) + "\n")

    def _path_rtt_ms(self, a: str, b: str) -> float | None:
        for x, y in ((a, b), (b, a)):
            for table in (self.before,):
                if y in table and x == self._anchor():
                    return table[y][1].rtt_median_ns / 1e6
        return None

    def end(self) -> None:
        """The cell is over (or failed): no relay may outlive it."""
        for s in self.spawned:
            if s.popen.returncode is None and s.popen.poll() is None:
                s.popen.terminate()
                try:
                    s.popen.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    s.popen.kill()
                    s.popen.wait()
        if not self.finished and any(s.remote_records for s in self.spawned):
            self.finished = True   # a failed cell: its records stay on the host until close


def _basis_note(basis: str, unc: float, median: float, rtt: float | None) -> str:
    if unc == 0:
        return "one clock: latency is one-way"
    text = (f"one clock by the measured offset, +-{unc / 1e6:.3g} ms")
    if basis == "one-way":
        return text + f" ({100 * unc / 1e6 / median:.1f} % of the median latency): one-way"
    rtt_text = f"; the path's round trip is {rtt:.3g} ms" if rtt else ""
    return (text + f": too uncertain for a one-way latency of {median:.3g} ms (more than "
            f"{100 * C.ONE_WAY_SHARE:.0f} %); latency is exact only for a symmetric path"
            + rtt_text + ", compare round trips")

