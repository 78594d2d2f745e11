"""One cell of the fidelity benchmark on each emulator: a trace pair replayed by the
relay or by mm-link, one iperf3 flow across it, the receiving interface's counter read
every 10 ms (linklab.emu.fidelity's docstring defines what is measured)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from linklab.emu.config import RelayConfig
from linklab.emu.directives import Trace
from linklab.emu.fidelity_metrics import Sample, parse_net_dev
from linklab.emu.mahimahi import log_zero_realtime_ns, mahimahi_namespace, mm_link_command
from linklab.emu.tap_wire import RelayWire, TapEnd, scratch_namespaces
from linklab.errors import LinklabError

ETH_HEADER = 14
UDP_PAYLOAD = 1472          # 1500-byte IP packets: one Mahimahi opportunity each
SAMPLE_INTERVAL_S = 0.01
MAX_READ_NS = 2_000_000
LEAD_S = 1.0                # relay started, TAPs up and iperf3 listening before the zero
WORKLOAD_CPU, EMULATOR_CPU = 0, 1   # as linklab.emu.bench: the emulator has a core
REALTIME_PRIORITY = 10     # SCHED_FIFO for both emulators (the relay's default)
INNER_MARK = "linklab-inner"


@dataclass(frozen=True)
class Workload:
    """One iperf3 flow; the client is on the trace's "up" sender side (the relay's a,
    Mahimahi's inside), ``down`` reverses it (-R)."""

    protocol: str          # tcp | udp
    direction: str         # up | down
    seconds: float         # iperf3 -t
    udp_bit_s: int = 0     # offered, UDP only
    queue_packets: int | None = None   # each emulator's drop-tail queue (None: its default)

    def client_args(self, server: str) -> list[str]:
        args = ["iperf3", "-c", server, "-t", f"{self.seconds:g}", "-J"]
        if self.direction == "down":
            args.append("-R")
        if self.protocol == "udp":
            args += ["-u", "-b", str(self.udp_bit_s), "-l", str(UDP_PAYLOAD)]
        return args


@dataclass(frozen=True)
class Measured:
    samples: tuple[Sample, ...]
    zero_ns: int           # CLOCK_MONOTONIC of the trace's time 0
    start_offset_s: float  # the iperf3 client started this long after the zero


class CounterSampler:
    """Reads one interface's received bytes (less ``header_bytes`` a packet) in the
    network namespace of process ``pid`` from /proc/<pid>/net/dev, every 10 ms."""

    def __init__(self, header_bytes: int):
        self.header_bytes = header_bytes
        self.samples: list[Sample] = []
        self._target: tuple[int, str] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def watch(self, pid: int, ifname: str) -> None:
        self._target = (pid, ifname)

    def start(self) -> CounterSampler:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            if self._target is None:
                continue
            pid, ifname = self._target
            before = time.monotonic_ns()
            try:
                text = Path(f"/proc/{pid}/net/dev").read_text()
            except OSError:   # not started yet, or ended
                continue
            after = time.monotonic_ns()
            found = parse_net_dev(text, ifname)
            # a read this thread was kept from finishing has no one time: left out
            if found is not None and after - before <= MAX_READ_NS:
                self.samples.append(Sample((before + after) // 2,
                                           found[0] - self.header_bytes * found[1]))

    def stop(self) -> tuple[Sample, ...]:
        self._stop.set()
        self._thread.join(timeout=2)
        return tuple(self.samples)


def realtime_others() -> set[str]:
    """Names of the user-space processes running SCHED_FIFO or SCHED_RR now, this
    benchmark's own excepted (/proc/<pid>/stat's 41st field is the policy): at the same
    priority as an emulator and on its CPU, such a process keeps it from running."""
    mine = {os.getpid()}
    names = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        head, _, tail = text.rpartition(")")
        fields = tail.split()
        pid, ppid, policy = int(stat.parent.name), int(fields[1]), int(fields[38])
        if policy in (1, 2) and cmdline and pid not in mine and ppid not in mine:
            names.add(head.partition("(")[2])
    return names


def _netns(ns: str, *args: str) -> list[str]:
    return ["ip", "netns", "exec", ns, "taskset", "-c", str(WORKLOAD_CPU), *args]


def _end(*procs: subprocess.Popen | None) -> None:
    for proc in procs:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def _stop_group(leader: subprocess.Popen) -> None:
    """mm-link and everything it started (its session, started for it): SIGTERM, then
    after 3 s SIGKILL to whatever of the session is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(leader.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        leader.wait(timeout=3)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(leader.pid, signal.SIGKILL)
    leader.wait(timeout=10)


def _finish(client: subprocess.Popen, work: Workload, where: str) -> str:
    """The client's output once it ended (the server, whose output is not read, is
    stopped after it: a reversed flow's server may still be waiting on a queue the
    emulator took with it)."""
    try:
        out, _ = client.communicate(timeout=work.seconds + 30)
    except subprocess.TimeoutExpired:
        raise LinklabError(f"iperf3 through {where} did not end within "
                           f"{work.seconds + 30:g} s") from None
    if '"error"' in out or not out.strip():
        tail = out.strip().splitlines()[-3:] if out.strip() else ["no output"]
        raise LinklabError(f"iperf3 through {where}: {' '.join(tail)}")
    return out


def run_linklab(traces: tuple[Path, Path], work: Workload, workdir: Path) -> Measured:
    """The relay with the up trace a -> b and the down trace b -> a, its epoch (what
    ``trace_start: <UTC time>`` sets) LEAD_S after its start; the client starts at it."""
    pid = os.getpid()
    ns_a, ns_b = f"linklab-fid{pid}-a", f"linklab-fid{pid}-b"
    ifa, ifb = f"lfd{pid % 100000}a", f"lfd{pid % 100000}b"
    server = client = None
    sampler = CounterSampler(ETH_HEADER)
    with scratch_namespaces((ns_a, ns_b), lo_up=True) as wires:
        zero = time.monotonic_ns() + round(LEAD_S * 1e9)
        stages = [(Trace(path, limit_packets=work.queue_packets),) for path in traces]
        config = RelayConfig(ifa, ifb, ab=stages[0], ba=stages[1], seed=1, epoch_ns=zero,
                             realtime_priority=REALTIME_PRIORITY)
        wire = RelayWire(TapEnd(ns_a, ifa, "10.216.0.1/24"), TapEnd(ns_b, ifb, "10.216.0.2/24"),
                         config, workdir / "relay")
        wires.append(wire)
        wire.up(cpu=EMULATOR_CPU)
        try:
            server = subprocess.Popen(_netns(ns_b, "iperf3", "-s", "-1", "-B", "10.216.0.2"),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if work.direction == "up":
                sampler.watch(server.pid, ifb)
            sampler.start()
            time.sleep(max(0.0, (zero - time.monotonic_ns()) / 1e9))
            started = time.monotonic_ns()
            client = subprocess.Popen(_netns(ns_a, *work.client_args("10.216.0.2")),
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True)
            if work.direction == "down":
                sampler.watch(client.pid, ifa)
            _finish(client, work, "linklab's relay")
        finally:
            samples = sampler.stop()
            _end(client, server)
    return Measured(samples, zero, (started - zero) / 1e9)


def _inner_start(mm: subprocess.Popen) -> tuple[int, int]:
    """(pid, CLOCK_REALTIME ns) the command inside mm-link printed first."""
    line = mm.stdout.readline() if mm.stdout else ""
    if not line.startswith(INNER_MARK):
        rest = mm.communicate(timeout=10)[0] if mm.poll() is None else (mm.stdout.read() or "")
        raise LinklabError(f"mm-link did not start its command: {(line + rest).strip()[-300:]}")
    _, pid, realtime_ns = line.split()
    return int(pid), int(realtime_ns)


def run_mahimahi(binary: Path, traces: tuple[Path, Path], work: Workload) -> Measured:
    """mm-link with the same traces in a namespace of its own (linklab.emu.mahimahi);
    the client runs inside it, as soon as mm-link starts it (Mahimahi starts its trace
    with its shell)."""
    name = f"linklab-mm{os.getpid()}"
    server = mm = None
    sampler = CounterSampler(0)   # TUN devices: IP packets, no link header
    with mahimahi_namespace(name, traces) as (home, up, down):
        log_option = "uplink-log" if work.direction == "up" else "downlink-log"
        log = home / "link.log"
        client = " ".join(work.client_args('"$MAHIMAHI_BASE"'))
        # the command inside leaves the SCHED_FIFO it inherits from mm-link
        inner = (f'echo {INNER_MARK} $$ $(date +%s%N); '
                 f'exec chrt -o 0 taskset -c {WORKLOAD_CPU} {client}')
        try:
            server = subprocess.Popen(_netns(name, "iperf3", "-s", "-1"),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.3)
            if work.direction == "up":
                sampler.watch(server.pid, "link-")  # mm-link's outside TUN, link-<its pid>
            sampler.start()
            mm = subprocess.Popen(mm_link_command(binary, name, (up, down), log_option, log,
                                                  inner, work.queue_packets, EMULATOR_CPU,
                                                  REALTIME_PRIORITY),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  start_new_session=True)
            inner_pid, inner_realtime = _inner_start(mm)
            if work.direction == "down":
                sampler.watch(inner_pid, "ingress")   # the TUN inside mm-link's namespace
            _finish(mm, work, "mm-link")
            with log.open(errors="replace") as header:   # the log has a line per packet
                zero_realtime = log_zero_realtime_ns(header.read(4096))
        finally:
            samples = sampler.stop()
            if mm is not None:
                _stop_group(mm)
            _end(server)
    to_monotonic = time.monotonic_ns() - time.time_ns()
    return Measured(samples, zero_realtime + to_monotonic,
                    (inner_realtime - zero_realtime) / 1e9)
