"""Emulated hosts and impaired links: network-namespace hosts joined by impaired links.

Python API (for the bench and tests)::

    from linklab.link import testbed

    with testbed(preset="wifi-severe", topology="pair", name="cell7",
                 loss=None, rate=None, outage=None, mtu=None) as bed:
        bed.hosts            # {"robot": Host(name, netns, address, interface), "edge": ...}
        bed.hosts["edge"].address            # "10.77.0.100"
        sub = bed.popen("edge", ["probe", "sub", ...], stdout=PIPE)   # inside a host
        bed.run("robot", ["ping", "-c", "1", bed.hosts["edge"].address])
        bed.counters()       # {"stages": [{link, direction, kind, params, passed_packets,
                             #   passed_bytes, dropped_packets, dropped_bytes}, ...],
                             #  "interfaces": {host: {ifname: {rx_bytes, tx_bytes, ...}}}}
        bed.outage_t0        # CLOCK_MONOTONIC ns the outage schedule counts from, or None
        bed.outage_events()  # measured switch times of the outage windows
        bed.status()         # everything `linklab link status --json` shows

* ``preset``: a name from ``presets.yaml`` (``wifi-ideal``, ``wifi-mild``, ``wifi-severe``,
  ``wifi-outage``, ``ethernet-1g``, ``lan-2.5g``) or ``presets-emu.yaml``, or None for a
  clean link. A preset from the user's own file: ``preset_fields=resolve_preset(name,
  [path])`` (``linklab.link.presets``) with ``preset=name``; the fields are recorded
  with the run, so other processes need not see the file.
* Overrides (strings with units, as on the command line): ``loss="1%"``,
  ``rate="100Mbit/s"``, ``outage="10s+20s"`` (or ``"5s+2s/30s"``, repeating),
  ``mtu=1500``; per direction: ``loss={"up": "1%", "down": "20%"}`` or
  ``loss="up=1%,down=20%"``. ``up`` is robot -> edge. Userspace-emulator fields
  (``delay``, ``jitter``, ``burst_loss``, ``trace``) need the emu wire; without it
  ``testbed()`` raises ``EnvironmentProblem`` before anything is built.
* ``topology``: ``pair`` (robot, edge), ``star`` (``hosts=N`` robots robot1..N, ap, edge;
  the rate is shared), ``chain`` (robot, ap, edge; ap routes). See ``topology.py``.
  ``cluster`` (paper 001): nodes robot and edge, pods robotpod1.. and edgepod1.., each
  pod's second container ``<pod>c2``; ``overlay="vxlan"|"none"``,
  ``encryption="none"|"wireguard"``, ``datapath="iptables"|"ebpf"``, ``nodes=``,
  ``pods=``; ``bed.plan.cluster`` is its plan (``cluster_plan.py``).
* ``arm_outage=False`` builds the outage rules but starts the schedule only when you call
  ``bed.arm_outage(t0_ns=None)`` (e.g. when the publishers start); it returns t0.
* Leaving the block -- normally, by an exception, or by SIGINT/SIGTERM/SIGHUP of this
  process -- takes everything down. After a SIGKILL, ``linklab link clean`` does.
* ``up(...)`` returns a ``Testbed`` that stays up (what ``linklab link up`` uses);
  ``open_run(name)`` reopens a run from any process; ``clean(name=, prefix=)``.

Every change goes through one journal (``journal.py``; records of what was made,
``made.py``) persisted under ``/run/linklab`` (``$LINKLAB_STATE_DIR``; owned by the user
and 0700, checked each time: ``statedir.py``); processes started through ``bed.popen`` /
``bed.run`` are recorded too, so ``down``/``clean`` end them; ``runs.py`` lists runs and
cleans up. Nothing is made outside the run's namespaces
(``linklab-<run>-<host>``; interfaces, nft tables and qdiscs carry the run's tag).
What ``up`` will build, decided first: ``blueprint.py``; building and taking down:
``lifecycle.py``; the testbed object: ``namespace_bed.py``. Impairments, one class each:
``impairments/``. Wires (veth,
or a userspace relay added by the emu package): ``wires/__init__.py``.
"""

from __future__ import annotations

import importlib
from typing import Any

# The Python API, imported on first use (PEP 562): a process that needs one module of
# this package -- the outage scheduler (``python -m linklab.link.outage``) has one
# second from t0 to its first switch -- does not load the whole testbed with it.
_API = {"Host": "namespace_bed", "Testbed": "namespace_bed", "design": "blueprint",
        "clean": "lifecycle", "down": "lifecycle", "open_run": "lifecycle", "residue": "lifecycle",
        "testbed": "lifecycle", "up": "lifecycle"}


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_API[name]}"), name)


__all__ = ["Host", "Testbed", "clean", "design", "down", "open_run", "residue", "testbed",
           "up"]
