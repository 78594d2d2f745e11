"""What a bench run checks before its first cell -- and ``--dry-run`` with it.

:func:`check_before_run` is the one sequence both take (cli/bench.py): the gates against
the matrix (gates.check_scope), the CPU contention this machine can apply (bench/cpu.py:
cpu_load, cpu_quota), then the environment's ``check_ready`` (probes built,
profiles and QoS each middleware can take, links that can be designed here; a field run's
hosts are reached only when ``connect``). Only what changes the system is left to the
real run, so a dry run exits as the run would: the same one-line message, the same exit
status.

A check that refuses one cell names the scenario's file:line of the field responsible
(:func:`located`): the environment tags the error with the cell (and topic) it was
checking (:func:`about`), the error names the field (its ``argument``), and the scenario
knows where that field -- or that value of an axis -- is written (``Scenario.places``,
``Cell.choices``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from linklab.bench import bridges, broker_host
from linklab.bench.cpu import check_cells
from linklab.bench.fields import Located
from linklab.bench.gates import Gate, check_scope
from linklab.bench.matrix import Cell
from linklab.bench.spec import Scenario
from linklab.bench.topics import Topic
from linklab.errors import UsageError

# The field(s) of a scenario an error's argument stands for (the QoS policies of
# linklab.probes.qos come from qos:, or from history:/depth:/durability: when set).
FIELDS_OF = {
    "history": ("history", "depth", "qos"),
    "depth": ("depth", "history", "qos"),
    "durability": ("durability", "qos"),
    "reliability": ("qos",),
}


@contextlib.contextmanager
def about(cell: Cell, topic: Topic | None = None, field: str | None = None
          ) -> Iterator[None]:
    """Tag a UsageError raised inside with the cell (and topic) being checked, and with
    the scenario field it is about when the error's argument does not say."""
    try:
        yield
    except UsageError as error:
        if getattr(error, "cell", None) is None:
            error.cell = cell  # type: ignore[attr-defined]
            error.topic = topic  # type: ignore[attr-defined]
            error.field = field  # type: ignore[attr-defined]
        raise


def check_gates(gates: Sequence[Gate], cells: Sequence[Cell]) -> None:
    """Every gate applies to some cell and topic of the matrix (gates.check_scope)."""
    check_scope(gates, [(cell.axes(), [t.name for t in cell.topics]) for cell in cells])


def check_before_run(scenario: Scenario, cells: list[Cell], env: Any, gates: Sequence[Gate],
                     *, connect: bool = True) -> None:
    """The checks of a run before its first cell; ``connect`` False (--dry-run): reach
    no remote host."""
    check_gates(gates, cells)
    try:
        # cpu_load / cpu_quota: what this machine can apply (refused on real hosts)
        check_cells(cells, remote=bool(scenario.hosts), about=about)
        # where a broker/router runs: a brokered middleware, a host of the topology
        broker_host.check_cells(cells, remote=bool(scenario.hosts), about=about)
        # a bridged middleware: bridges on this machine's hosts, between two hosts
        bridges.check_cells(cells, remote=bool(scenario.hosts), about=about)
        env.check_ready(cells, connect=connect)
    except UsageError as error:
        raise located(error, scenario) from None


def located(error: UsageError, scenario: Scenario) -> UsageError:
    """``error`` (tagged by :func:`about`) as ``FILE:LINE: FIELD: cell ID: message``,
    naming the line of the field its argument names (of the cell's value when the field
    is an axis; of the topic entry when the topic sets it itself). Untagged errors, and
    errors whose field is not written in the scenario, come back as they are (with the
    cell's id when tagged)."""
    cell: Cell | None = getattr(error, "cell", None)
    if cell is None:
        return error
    topic: Topic | None = getattr(error, "topic", None)
    argument = error.argument
    message = str(error)
    if argument and message.startswith(f"{argument}: "):
        message = message[len(argument) + 2:]
    if not message.startswith(f"cell {cell.cell_id}: ") and len(scenario.axes) + (
            scenario.trials > 1):  # "cell" alone names the only cell of no axes
        message = f"cell {cell.cell_id}: {message}"
    field = argument or getattr(error, "field", None)
    place = _place(field, scenario, cell, topic, message) if field else None
    if place is None:
        return UsageError(message, argument=argument)
    return place.error(message)


def _place(argument: str, scenario: Scenario, cell: Cell, topic: Topic | None,
           message: str) -> Located | None:
    keys = FIELDS_OF.get(argument, (argument,))
    if topic is not None and topic.where is not None:
        for key in keys:
            if key in topic.own:
                return topic.where.sub(key)
    choices = dict(cell.choices)
    if argument == "link":
        # a link.FIELD axis whose field the reason names, else the link itself
        reason = message.split(f"link {cell.link}: ", 1)[-1]
        for key, index in cell.choices:
            if key.startswith("link.") and key[5:] in reason:
                return scenario.places.get(f"{key}[{index}]")
    for key in keys:
        if key in choices:
            return scenario.places.get(f"{key}[{choices[key]}]") or scenario.places.get(key)
        if key in scenario.places:
            return scenario.places[key]
    return None
