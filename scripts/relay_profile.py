"""Where the relay's time goes: perf samples of a saturated relay, grouped by call chain.

    cargo build --profile profiling --manifest-path emu/Cargo.toml --target-dir build/emu
    .venv/bin/python scripts/relay_profile.py --frame 64 [--binary build/emu/profiling/linklab-emu]

Runs one cell of ``python -m linklab.emu.bench_wires`` (the relay with b's receive stack
in its TAP writes, flooded by linklab-emu-flood) while ``perf record -F 999 -g -a -C 1``
samples the relay's CPU, then prints the share of the relay's samples per group (the
table in docs/RESULTS.md, where the relay's time goes). perf starts before the flood: a
perf started while both CPUs run real-time work gets no CPU to start with.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from linklab.emu import bench_wires

KERNEL_GROUPS = (  # (group, any of these functions in the chain), first match wins
    ("b's receive stack inside the TAP write", ("netif_receive_skb", "ip_rcv",
                                                "__netif_receive_skb_one_core")),
    ("TAP write (copy in, skb build)", ("tun_chr_write_iter",)),
    ("TAP read (copy out, skb free)", ("tun_chr_read_iter",)),
    ("epoll", ("do_epoll_wait",)),
    ("timerfd", ("timerfd_read_iter", "do_timerfd_settime")),
    ("interrupts, softirq", ("__irq_exit_rcu", "handle_softirqs")),
    ("io_uring submission and completion", ("__do_sys_io_uring_enter",)),
    ("read/write syscall layers", ("ksys_read", "ksys_write")),
)


def group(chain: list[tuple[str, str]]) -> str:
    """The group of one sample; chain: (function, dso), leaf first."""
    leaf, dso = chain[0]
    if "kernel" not in dso:
        if leaf.startswith("linklab_emu::packet") or "memmove" in leaf:
            return "user: frame copy (pool)"
        if leaf.startswith("linklab_emu"):
            return "user: relay code (stages, pipeline, loop)"
        return "user: libc, vDSO"
    names = {name for name, _ in chain}
    for label, marks in KERNEL_GROUPS:
        if names.intersection(marks):
            return "kernel: " + label
    return "kernel: syscall entry/exit, other"


def samples(script_text: str) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    for block in script_text.split("\n\n"):
        chain = []
        for line in block.strip().splitlines()[1:]:
            ip_sym, _, dso = line.strip().partition(" (")
            name = ip_sym.split(None, 1)[-1].split("+0x")[0]
            chain.append((name, dso.rstrip(")")))
        if chain:
            counts[group(chain)] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frame", type=int, default=64)
    parser.add_argument("--binary", default="build/emu/profiling/linklab-emu")
    parser.add_argument("--data", default="/tmp/linklab-relay-profile.data")
    args = parser.parse_args()
    binary = Path(args.binary).resolve()
    if not binary.is_file():
        sys.exit(f"--binary: {binary} is not built (cargo build --profile profiling ...)")
    os.environ["LINKLAB_EMU"] = str(binary)
    flood = binary.with_name("linklab-emu-flood")
    if not flood.exists():
        flood.symlink_to(binary.parents[1] / "release" / "linklab-emu-flood")
    perf = subprocess.Popen(["perf", "record", "-F", "999", "-m", "64M", "-q", "-g", "-a",
                             "-C", str(bench_wires.RELAY_CPU), "-o", args.data, "--",
                             "sleep", "13"])
    time.sleep(1)
    pids: list[int] = []

    def find_relay() -> None:
        for _ in range(80):
            found = subprocess.run(["pgrep", "-n", "-f", f"^{binary} --config .* --cpu"],
                                   capture_output=True, text=True).stdout.split()
            if found:
                pids.append(int(found[0]))
                return
            time.sleep(0.1)

    finder = threading.Thread(target=find_relay)
    finder.start()
    cell = bench_wires.run_cell(bench_wires.PLACEMENTS[2], args.frame, 7, f"prof{args.frame}")
    finder.join()
    perf.wait()
    if not pids:
        sys.exit("relay_profile: the relay's process was not found")
    text = subprocess.run(["perf", "script", "-i", args.data, "--pid", str(pids[0]), "-F",
                           "comm,ip,sym,dso"], capture_output=True, text=True).stdout
    counts = samples(text)
    total = sum(counts.values()) or 1
    print(f"{cell['frame_bytes']} B: {cell['delivered_frames_per_s']} frames/s delivered, "
          f"relay CPU {cell['relay_cpu_percent']} %, "
          f"{cell['frames_per_relay_cpu_second']} frames per relay CPU-second")
    for name, n in counts.most_common():
        print(f"{100 * n / total:5.1f} %  {name}")
    print(f"{total} samples")


if __name__ == "__main__":
    main()
