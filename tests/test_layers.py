"""The layers of src/linklab, lowest first, enforced on every import -- at a module's top,
inside functions and under ``if TYPE_CHECKING:`` alike (docs/architecture.md):

    core (units, errors, the package root, output, signals, procfs) < rundir, middleware < model
    < tune, emu, probes, security, profiles < link, brokers < bench
    < report, field, k8s, sft, drive < cli (every command, linklab.cli.*)

A module imports from its own package, its layer's other packages, or a lower layer;
never from a higher one. No exceptions are listed here, on purpose."""

from __future__ import annotations

from test_import_cycles import _modules, import_graph

LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"linklab", "units", "errors", "output", "held_signals", "stop_signals",
               "procfs"}),
    # the run directory (data, written by bench, read above it); the middleware registry
    frozenset({"rundir", "middleware"}),
    frozenset({"model"}),
    frozenset({"tune", "emu", "probes", "security", "profiles"}),
    frozenset({"link", "brokers"}),
    frozenset({"bench"}),
    frozenset({"report", "field", "k8s", "sft", "drive"}),
    frozenset({"cli"}),
)


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer_of(module: str) -> int:
    package = package_of(module)
    for index, members in enumerate(LAYERS):
        if package in members:
            return index
    raise AssertionError(f"{module}: package {package!r} is in no layer; add it to LAYERS "
                         "and to docs/architecture.md")


def test_every_module_has_a_layer():
    for module in _modules():
        layer_of(module)


def test_no_import_runs_up_the_layers():
    upward = sorted(f"{module} -> {target}"
                    for module, targets in import_graph().items()
                    for target in targets if layer_of(target) > layer_of(module))
    assert upward == [], "\n".join(upward)


def test_the_commands_live_in_the_cli_package_only():
    """The domain packages export functions and types, never commands."""
    import ast

    for module, path in _modules().items():
        if package_of(module) == "cli":
            continue
        tree = ast.parse(path.read_text())
        names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                 and node.module in ("typer",) for alias in node.names}
        imports_typer = names or any(isinstance(node, ast.Import) and any(
            a.name == "typer" for a in node.names) for node in ast.walk(tree))
        assert not imports_typer, f"{module} imports typer: its commands belong in linklab.cli"
