"""The runs in the state directory: listing them, removing their state, ``clean``.

``clean`` removes what linklab left behind and only that: runs whose owner is gone are
undone from their journals, and marked namespaces whose state file is gone are swept.
A run made by ``linklab link up`` (``detached`` in its state, no owner) is meant to live
until ``linklab link down``: ``clean`` never takes it down (see ``kept_by``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from linklab.errors import LinklabError
from linklab.link import userns
from linklab.link.journal import Journal, end_processes_in_netns, process_alive
from linklab.link.names import RUN_NAME, parse_netns_name
from linklab.link.netops import ALIAS_PREFIX
from linklab.link.statedir import StateDir
from linklab.link.system import Shell, list_netns


def check_privileges() -> None:
    """Root, or a user namespace we can use (else a one-line PrivilegeError)."""
    userns.check()


def open_store(create: bool = False) -> StateDir | None:
    """The checked state directory, None if it does not exist (and ``create`` is False)."""
    try:
        return StateDir.open(create=create)
    except FileNotFoundError:
        return None


def list_runs() -> list[str]:
    store = open_store()
    return [] if store is None else run_names(store)


def run_names(store: StateDir) -> list[str]:
    """The runs in a state directory: ``<run>.json`` (companions such as
    ``<run>.x.stats.json`` written by stages and wires are not runs)."""
    return sorted(n[:-5] for n in store.names()
                  if n.endswith(".json") and RUN_NAME.match(n[:-5]))


def journal_down(journal: Journal) -> list[str]:
    """Undo a run from its journal alone (works even if its inputs no longer validate)."""
    problems = journal.undo_all()
    if not problems:
        remove_state(journal)
    return problems


def remove_state(journal: Journal) -> None:
    """The state file and its companions (outage events and log, the relay's files)."""
    for extra in _companions(journal.store, journal.name):
        journal.store.remove(extra)
    journal.remove()


def _companions(store: StateDir, run: str) -> list[str]:
    """Files next to a run's state file that belong to it: ``<run>.<anything>``."""
    return [n for n in store.names() if n.startswith(run + ".") and n != run + ".json"]


def _in_scope(run: str, name: str | None, prefix: str | None) -> bool:
    if name is not None:
        return run == name
    if prefix is not None:
        return run.startswith(prefix)
    return True


def kept_by(run: str, state: dict[str, Any]) -> str | None:
    """Why run ``run`` is not left behind (a line for the report), None if it is.

    * A recorded owner (a bench, a ``testbed()`` block, a ``linklab link up`` still
      building it) that is alive keeps it; a dead owner leaves it behind.
    * No owner: the run is detached -- made by ``linklab link up`` and recorded as
      ``detached`` once fully up (state files of an older linklab had no mark; their
      ownerless runs were ``link up`` runs too) -- and stays until ``link down``. Only a
      normal user's detached run whose holder process is gone is left behind: its
      namespaces died with the holder's user namespace.
    """
    owner = state.get("owner")
    if owner:
        if process_alive(owner.get("pid"), owner.get("start")):
            return f"{run}: owned by live process {owner['pid']}"
        return None
    holder = state.get("holder")
    if holder and not process_alive(holder.get("pid"), holder.get("start")):
        return None
    return (f"{run}: made by linklab link up, it stays until linklab link down "
            f"--name {run}")


def clean(name: str | None = None, prefix: str | None = None,
          sweep: bool = True) -> dict[str, Any]:
    """Remove what linklab left behind (only that), within the scope given.

    1. Every run in the state directory whose owner process is gone (a bench, a
       ``testbed()`` block or a ``linklab link up`` killed before the run was up) is
       undone from its journal: the processes it started in its hosts are ended (pid
       and start time recorded), then everything else it made, newest first.
    2. Namespaces named ``linklab-<run>-<host>`` that carry linklab's mark (the alias
       of their lo names the run's state file) but whose state file is gone are deleted,
       after ending the processes still inside them (``sweep=False`` skips this step).
       A run recorded in another state directory is left alone.
    Runs whose owner process is alive, and runs made by ``linklab link up`` (detached:
    they stay until ``linklab link down``, whatever the scope), are left alone and
    reported (``kept_by``).
    """
    check_privileges()
    report: dict[str, Any] = {"runs_removed": [], "namespaces_removed": [], "skipped": [],
                              "problems": []}
    store = open_store()
    if store is not None:
        for run in run_names(store):
            if _in_scope(run, name, prefix):
                _clean_run(store, run, report)
        _clean_companions(store, name, prefix, report)
    if sweep and userns.is_root():
        _sweep_namespaces(name, prefix, report)
    return report


def _clean_run(store: StateDir, run: str, report: dict[str, Any]) -> None:
    """Step 1 of :func:`clean` for one recorded run."""
    try:
        journal = Journal.load(store, run)
    except FileNotFoundError:
        return
    except LinklabError as error:
        report["problems"].append(str(error))
        return
    state = journal.state
    keeper = kept_by(run, state)
    if keeper is not None:
        report["skipped"].append(keeper)
        return
    holder = state.get("holder")
    if holder and not userns.is_root():
        # The namespaces live in the holder's user namespace: end what was started
        # in its hosts, stop the holder (it takes the run down) or, if it is dead,
        # the helpers that still hold them.
        journal.stop_processes(role="host")
        if process_alive(holder.get("pid"), holder.get("start")):
            userns.stop_holder(holder, journal.path)
        if journal.exists():
            journal.reload()
            journal.stop_processes()
            remove_state(journal)
        report["runs_removed"].append(run)
        return
    problems = journal_down(journal)
    if problems:
        report["problems"].extend(f"{run}: {p}" for p in problems)
    else:
        report["runs_removed"].append(run)


def _clean_companions(store: StateDir, name: str | None, prefix: str | None,
                      report: dict[str, Any]) -> None:
    """Companion files whose run is gone (e.g. a process killed between removing the
    state file and its companions)."""
    present = set(store.names())
    for extra in sorted(present):
        run = extra.split(".", 1)[0]
        if ("." in extra and RUN_NAME.match(run) and _in_scope(run, name, prefix)
                and f"{run}.json" not in present and store.remove(extra)):
            report.setdefault("files_removed", []).append(extra)


def _sweep_namespaces(name: str | None, prefix: str | None, report: dict[str, Any]) -> None:
    """Step 2 of :func:`clean`: marked namespaces whose state file is gone."""
    shell = Shell()
    for netns in list_netns(shell):
        parsed = parse_netns_name(netns)
        if parsed is None or not _in_scope(parsed[0], name, prefix):
            continue
        mark = _state_mark(shell, netns)
        if mark is None:
            report["skipped"].append(f"{netns}: no linklab mark on its lo (not made by "
                                     "linklab, or killed while being made: ip netns delete)")
            continue
        if Path(mark).exists():
            continue  # a run that is recorded (its own state directory handles it)
        end_processes_in_netns(netns)
        result = shell.run(["ip", "netns", "delete", netns], check=False)
        if result.returncode == 0:
            report["namespaces_removed"].append(netns)
        else:
            report["problems"].append(f"{netns}: {result.stderr.strip()}")


def _state_mark(shell: Shell, netns: str) -> str | None:
    """The state file a linklab namespace belongs to (the alias of its lo), or None."""
    result = shell.run(["ip", "-n", netns, "-j", "link", "show", "dev", "lo"], check=False)
    if result.returncode != 0 or not result.stdout.strip():
        return None
    alias = json.loads(result.stdout)[0].get("ifalias", "")
    return alias[len(ALIAS_PREFIX):] if alias.startswith(ALIAS_PREFIX) else None


def residue(name: str) -> list[str]:
    """Namespaces of run ``name`` that exist (for checks after down/clean)."""
    return [ns for ns in list_netns(Shell())
            if (parsed := parse_netns_name(ns)) is not None and parsed[0] == name]
