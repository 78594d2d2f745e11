"""``linklab k8s``: run scenarios on a Kubernetes cluster.

    linklab k8s run SCENARIO.yaml [--dry-run] [--quick] [--resume RUN_DIR] ...
    linklab k8s preflight SCENARIO.yaml [--pod-check]
    linklab k8s image build|push ...
    linklab k8s clean [--run ID | --all]

Cluster options as kubectl: KUBECONFIG / --kubeconfig, --context, --namespace (-n).
Exit status as ``linklab bench`` (0, 1 gates missed, 2 bad input, 70 a cell could not
run, 130 interrupted, 143 by SIGTERM); ``preflight`` exits 1 when a cell cannot be placed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from linklab.bench.run_start import create_run, holds_scenario, saved_gates, saved_scenario
from linklab.cli.options import (
    FORMAT_OPTION,
    GATE_OPTION,
    PRESET_FILES_OPTION,
    PRESETS_OPTION,
    QUICK_OPTION,
    RUNS_OUT_OPTION,
    SCENARIO_ARGUMENT,
    dry_run_option,
    options_from,
    output_format,
    repeat_option,
    resume_option,
)
from linklab.cli.run_outcome import conclude_run
from linklab.errors import UsageError
from linklab.output import console, err_console, err_line, print_text
from linklab.stop_signals import exit_status

DEFAULT_IMAGE = "localhost/linklab-probe:latest"

k8s_app = typer.Typer(name="k8s", no_args_is_help=True, help=(
    "Run benchmark scenarios on a Kubernetes cluster: the probes run as pods placed as "
    "each cell says, their records come back through the pod logs, into the same run "
    "directory as linklab bench."))


def _kv(values: list[str], argument: str, sep: str = "=") -> dict[str, str]:
    out = {}
    for value in values:
        key, found, val = value.partition(sep)
        if not found or not key or not val:
            raise UsageError(f"{value!r}: expected KEY{sep}VALUE", argument=argument)
        out[key] = val
    return out


def _cluster(kubeconfig, context, namespace):
    from linklab.k8s.cluster import connect

    return connect(str(kubeconfig) if kubeconfig else None, context, namespace)


# Each option's help, as --help shows it.
OPTION_HELP = {
    "--kubeconfig": "Kubeconfig file (default: $KUBECONFIG, ~/.kube/config).",
    "--context": "Kubeconfig context (default: the current one).",
    "--namespace": "Namespace (default: the context's, else 'default').",
    "--image": f"linklab probe image (default {DEFAULT_IMAGE}; see 'linklab k8s image build').",
    "--pull-policy": "When the cluster pulls the image: Always, IfNotPresent or Never.",
    "--role": "Node role of a host for cells without a flow (default: the host name without its "
              "number; pods get nodeSelector linklab.io/role=ROLE). Repeatable.",
    "--node-selector": "Node label every pod requires. Repeatable.",
    "--memory": "Memory limit (and request) of every container, e.g. 512Mi. Default: none.",
    "--pull-secret": "Secret holding the credentials of a private registry (imagePullSecret).",
    "--start-timeout": "Seconds a pod may take to be scheduled and started.",
    "--kube-version": "Kubernetes version --dry-run validates against.",
}
_option = options_from(OPTION_HELP)

KUBECONFIG = _option(None, "--kubeconfig", metavar="FILE")
CONTEXT = _option(None, "--context")
NAMESPACE = _option(None, "--namespace", "-n")
IMAGE = _option(None, "--image", metavar="REF")
PULL = _option("IfNotPresent", "--pull-policy")
ROLE = _option([], "--role", metavar="HOST=ROLE")
SELECTOR = _option([], "--node-selector", metavar="KEY=VALUE")
MEMORY = _option(None, "--memory", metavar="QTY")
SECRET = _option(None, "--pull-secret", metavar="NAME")
START = _option(120.0, "--start-timeout", metavar="S")
KUBE_VERSION = _option("1.33", "--kube-version", metavar="X.Y")


def _options(run_id, image, pull, role, selector, memory, secret, start):
    from linklab.k8s.cluster_bed import K8sOptions

    if pull not in ("Always", "IfNotPresent", "Never"):
        raise UsageError(f"{pull!r}: expected Always, IfNotPresent or Never",
                         argument="--pull-policy")
    if start <= 0:
        raise UsageError(f"{start:g} must be above 0", argument="--start-timeout")
    return K8sOptions(run_id=run_id, image=image or DEFAULT_IMAGE, pull_policy=pull,
                      roles=_kv(role, "--role"), node_selector=_kv(selector, "--node-selector"),
                      memory=memory, pull_secret=secret, start_timeout_s=start)


def _load(scenario_path, quick, repeat, presets, resume):
    from linklab.bench.spec import load_scenario
    from linklab.k8s.scenario import expand_with_flows
    from linklab.rundir import RunStore

    store = None
    if resume is not None:
        store = RunStore.open(resume)
        if not holds_scenario(store.info):
            raise UsageError(f"{resume}/run.json does not hold its scenario", argument="--resume")
        if "k8s" not in store.info:
            raise UsageError(f"{resume} is a linklab bench run; continue it with linklab bench "
                             "--resume", argument="--resume")
        scenario = saved_scenario(store.info)
    else:
        if scenario_path is None:
            raise UsageError("give a scenario file or --resume RUN_DIR", argument="SCENARIO.yaml")
        scenario = load_scenario(scenario_path, quick=quick, repeat=repeat, preset_files=presets)
    return scenario, expand_with_flows(scenario), store


def failure_lines(rows: list[dict]) -> list[str]:
    """One line per cell that could not run (a linklab error) or failed, worded as at the
    end of a run (cli.run_outcome.conclude_run with failed_cells)."""
    lines = []
    for row in rows:
        if row.get("status") == "error":
            lines.append(f"linklab error in cell {row['cell_id']}: {row.get('failure_reason')}")
        elif row.get("status") == "failed":
            lines.append(f"cell {row['cell_id']} failed: {row.get('failure_reason')}")
    return lines




@k8s_app.command("run")
def run_command(
    scenario_path: Path | None = SCENARIO_ARGUMENT, quick: bool = QUICK_OPTION,
    resume: Path | None = resume_option("Continue a run: skip its finished cells."),
    dry_run: bool = dry_run_option("Print the manifests (for kubectl apply -f -), validated "
                                   "offline; touch no cluster."),
    kube_version: str = KUBE_VERSION, out: Path = RUNS_OUT_OPTION,
    repeat: int | None = repeat_option("Trials of every cell. Default: the scenario's trials."),
    presets: list[Path] = PRESETS_OPTION, gate: list[str] = GATE_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the finished cells as JSON."),
    fmt: str = FORMAT_OPTION,
    kubeconfig: Path | None = KUBECONFIG, context: str | None = CONTEXT,
    namespace: str | None = NAMESPACE, image: str | None = IMAGE, pull: str = PULL,
    role: list[str] = ROLE, selector: list[str] = SELECTOR, memory: str | None = MEMORY,
    secret: str | None = SECRET, start: float = START,
) -> None:
    """Run a scenario's cells as pods and write the run directory linklab report reads.

    Ctrl-C keeps the finished cells (naming those that failed, one line each) and
    deletes everything this run created in the cluster."""
    from linklab.bench.gates import parse_cli_gate
    from linklab.bench.matrix import estimate_s
    from linklab.k8s import cluster_run

    fmt = output_format(fmt, json_flag=as_json)
    if repeat is not None and repeat < 1:
        raise UsageError(f"{repeat} must be 1 or more", argument="--repeat")
    cli_gates = [parse_cli_gate(g) for g in gate]
    scenario, cells, store = _load(scenario_path, quick, repeat, presets, resume)
    if store is not None and image is None:
        image = (store.info["k8s"].get("sessions") or [{}])[-1].get("image")
    options = _options(cluster_run.new_run_id(), image, pull, role, selector, memory, secret, start)
    _check(scenario, cells, options, cli_gates)  # --dry-run too: nothing remote
    if dry_run:
        _print_manifests(scenario, cells, options, kube_version, namespace)
        return
    cluster = _cluster(kubeconfig, context, namespace)
    if store is None:
        store = create_run(out, scenario, [c.cell_id for c in cells], kind="k8s",
                           options={"quick": quick, "repeat": repeat, "gates": gate},
                           estimated_s=sum(estimate_s(c) for c in cells))
        store.info["k8s"] = {"sessions": []}
        store.save_info()
    else:
        cli_gates += [parse_cli_gate(g) for g in saved_gates(store.info)]
    err_console.print(f"run directory: {store.root}  (cluster {cluster.server}, namespace "
                      f"{cluster.namespace}, run id {options.run_id})")
    rows = _run_pods(store, cells, cluster, options, scenario)
    conclude_run(store, list(scenario.gates) + cli_gates, rows, fmt == "json",
                 failed_cells=True, fmt=fmt)


def _check(scenario, cells, options, cli_gates) -> None:
    """What a run checks before touching a cluster: the gates, and that every cell can be
    placed with these options."""
    from linklab.bench.checks import check_gates, located
    from linklab.k8s.cluster_bed import KubeEnvironment

    check_gates(list(scenario.gates) + cli_gates, cells)
    try:
        KubeEnvironment(None, options, scenario.presets).check_ready(cells)  # type: ignore
    except UsageError as error:
        raise located(error, scenario) from None


def _print_manifests(scenario, cells, options, kube_version: str, namespace) -> None:
    """--dry-run: every object of the run as YAML, validated offline."""
    from linklab.k8s import cluster_run
    from linklab.k8s.manifests import to_yaml
    from linklab.k8s.validate import validate_objects

    objects = cluster_run.dry_run_objects(cells, options, scenario)
    version = validate_objects(objects, kube_version)
    sys.stdout.write(f"# linklab k8s: {len(cells)} cells of {scenario.name}, run id "
                     f"{options.run_id}; validated against Kubernetes {version}\n"
                     "# pods of a cell start one after another: '<HOST pod IP>' is "
                     "filled in with the address of that host's pod once it runs\n")
    sys.stdout.write(to_yaml(objects, namespace))


def _run_pods(store, cells, cluster, options, scenario) -> list:
    """Run the cells as pods, one progress line per cell on stderr; an interruption keeps
    the finished cells, names those that failed and says how to continue."""
    from linklab.k8s import cluster_run

    shown: set[str] = set()

    def on_progress(p) -> None:
        if p.current is not None and p.current.cell_id not in shown:
            shown.add(p.current.cell_id)
            err_console.print(f"[{p.done_cells + 1}/{p.total_cells}] {p.current.cell_id}",
                              highlight=False)

    try:
        return cluster_run.run(store, cells, cluster, options, scenario, on_progress)
    except (KeyboardInterrupt, SystemExit) as stop:
        for line in failure_lines(store.rows):  # the kept cells that failed, one line each
            err_console.print(line, markup=False, highlight=False, emoji=False, soft_wrap=True)
        err_line(f"linklab: interrupted: {len(store.rows)}/{len(cells)} cells kept in "
                 f"{store.root}; the run's pods and ConfigMaps were deleted; continue "
                 f"with: linklab k8s run --resume {store.root}")
        raise typer.Exit(exit_status(stop) or 130) from None


@k8s_app.command("preflight")
def preflight_command(
    scenario_path: Path = typer.Argument(..., metavar="SCENARIO.yaml",
                                         help="The scenario to check."),
    quick: bool = typer.Option(False, "--quick", help="Check the scenario with its quick: "
                               "overrides."),
    presets: list[Path] = PRESET_FILES_OPTION,
    pod_check: bool = typer.Option(False, "--pod-check",
                                   help="Run one pod of the image: proves it pulls and "
                                        "starts, and reports the pod network's MTU."),
    kubeconfig: Path | None = KUBECONFIG, context: str | None = CONTEXT,
    namespace: str | None = NAMESPACE, image: str | None = IMAGE, pull: str = PULL,
    role: list[str] = ROLE, selector: list[str] = SELECTOR, secret: str | None = SECRET,
) -> None:
    """Say what will not work for a scenario on this cluster, before running it; exit 1
    when a cell cannot be placed."""
    from linklab.bench.namespace_environment import Links
    from linklab.k8s import cluster_run, preflight

    scenario, cells, _ = _load(scenario_path, quick, None, presets, None)
    options = _options(cluster_run.new_run_id(), image, pull, role, selector, None, secret, 120.0)
    cluster = _cluster(kubeconfig, context, namespace)
    result = preflight.check(cluster, cells, options, Links(scenario.presets), pod_check)
    for line in result.lines:
        print_text(line, highlight=False)
    for line in result.warnings:
        err_console.print(f"warning: {line}", highlight=False, soft_wrap=True)
    for line in result.errors:
        err_console.print(f"error: {line}", highlight=False, soft_wrap=True)
    if result.errors:
        raise typer.Exit(1)


@k8s_app.command("clean")
def clean_command(
    run: str | None = typer.Option(None, "--run", metavar="ID",
                                   help="Delete the objects of one run id."),
    all_runs: bool = typer.Option(False, "--all",
                                  help="Delete every object linklab created in the namespace."),
    kubeconfig: Path | None = KUBECONFIG, context: str | None = CONTEXT,
    namespace: str | None = NAMESPACE,
) -> None:
    """Delete the Pods and ConfigMaps linklab created (found by its labels only)."""
    from linklab.k8s import manifests as M

    if (run is None) == (not all_runs):
        raise UsageError("give --run ID or --all", argument="--run")
    selector = M.run_selector(run) if run else f"{M.MANAGED_BY[0]}={M.MANAGED_BY[1]}"
    cluster = _cluster(kubeconfig, context, namespace)
    found = cluster.leftovers(selector)
    left = cluster.delete_labelled(selector, wait_s=90)
    console.print(f"deleted {len(found) - len(left)} object(s) in namespace "
                  f"{cluster.namespace}", highlight=False)
    if left:
        raise UsageError(f"still there after 90 s: {', '.join(left)}", argument="clean")


image_app = typer.Typer(name="image", no_args_is_help=True,
                        help="The container image of linklab's probes: build it here, push "
                             "it to a registry.")


@image_app.command("build")
def image_build(
    tag: str = typer.Option(DEFAULT_IMAGE, "--tag", metavar="REF",
                            help="Name of the image to build."),
    archive: Path | None = typer.Option(None, "--archive", metavar="FILE.tar",
                                        help="Also write an OCI archive (for ctr/crictl "
                                             "import, kind load image-archive)."),
) -> None:
    """Build the probe image with buildah from the probes built here and the files they
    need (no base image is pulled)."""
    from linklab.k8s.image import build

    build(tag, archive)
    console.print(f"built {tag}", highlight=False)


@image_app.command("push")
def image_push(
    destination: str = typer.Argument(..., metavar="REGISTRY/NAME:TAG",
                                      help="Where to push the image."),
    tag: str = typer.Option(DEFAULT_IMAGE, "--tag", metavar="REF",
                            help="The local image to push."),
    tls_verify: bool = typer.Option(True, "--tls-verify/--no-tls-verify",
                                    help="Check the registry's TLS certificate."),
) -> None:
    """Push the image to a registry (credentials: buildah login / podman login)."""
    from linklab.k8s.image import push

    push(tag, destination, tls_verify)
    console.print(f"pushed {tag} to {destination}", highlight=False)


k8s_app.add_typer(image_app)


def register(app: typer.Typer) -> None:
    app.add_typer(k8s_app)
