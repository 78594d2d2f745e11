"""A real node for the test control plane: kubelet v1.33.13 (built by scripts/k8s-build.sh)
on Debian's containerd 1.6 + runc, pod networking by Debian's CNI plugins (a bridge of
its own with host-local addresses), the linklab probe image and a sandbox ("pause")
image imported into containerd (no image can be pulled here).

Everything lives under one temporary directory (containerd's root, state and socket,
the kubelet's root, the CNI configuration and address store); stop() deletes the pods,
stops the kubelet, the containers and containerd, removes the bridge and unmounts what
it mounted -- only what it made.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from k8s_control_plane import (
    BIN,
    CACHE,
    K8S_VERSION,
    ControlPlane,
    _openssl,
    binaries_missing,
    free_port,
)

PAUSE_BIN = CACHE / f"v{K8S_VERSION}" / "bin" / "linklab-pause"
PAUSE_IMAGE = "localhost/linklab-pause:1"


def _run(*argv: str, check: bool = True, timeout: float = 120, **kw):
    return subprocess.run(list(argv), capture_output=True, text=True, check=check,
                          timeout=timeout, **kw)


def build_pause_image(archive: Path) -> None:
    root = archive.parent / "pause-rootfs"
    root.mkdir(exist_ok=True)
    ctr = _run("buildah", "from", "scratch").stdout.strip()
    try:
        _run("buildah", "copy", "--quiet", ctr, str(PAUSE_BIN), "/pause")
        _run("buildah", "config", "--entrypoint", '["/pause"]', ctr)
        _run("buildah", "commit", "--quiet", "--rm", ctr, PAUSE_IMAGE)
    except BaseException:
        _run("buildah", "rm", ctr, check=False)
        raise
    _run("buildah", "push", "--quiet", PAUSE_IMAGE, f"oci-archive:{archive}:{PAUSE_IMAGE}")


def kube_chains() -> set[tuple[str, str]]:
    """(table, chain) of the KUBE-* iptables chains there are now."""
    out = set()
    for table in ("filter", "nat", "mangle"):
        listing = _run("iptables", "-t", table, "-S", check=False).stdout
        out |= {(table, line.split()[1]) for line in listing.splitlines()
                if line.startswith("-N KUBE-")}
    return out


class RealNode:
    def __init__(self, root: Path, cp: ControlPlane, name: str, labels: dict[str, str],
                 index: int = 0):
        self.root = root
        self.cp = cp
        self.name = name
        self.labels = labels
        self.sock = root / "containerd.sock"
        self.index = index
        self.bridge = f"llcni{os.getpid() % 100000}x{index}"
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.mounted: list[Path] = []
        self.chains_before: set[tuple[str, str]] = set()
        self.cgroups_before: set[tuple[str, str]] = set()

    def ctr(self, *args: str, check: bool = True, timeout: float = 300):
        return _run("ctr", "--address", str(self.sock), "--namespace", "k8s.io", *args,
                    check=check, timeout=timeout)

    def _start(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.root / f"{name}.log", "wb")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.procs.append((name, proc))
        return proc

    def start(self, images: list[Path]) -> RealNode:
        d = self.root
        self.chains_before = kube_chains()
        self.cgroups_before = {(h.name, "k8s.io") for h in Path("/sys/fs/cgroup").iterdir()
                               if (h / "k8s.io").is_dir()}
        net = f"10.{200 + os.getpid() % 50}.{(os.getpid() * 4 + self.index) % 250}"
        subnet = f"{net}.0/24"
        # the node's address: the gateway of its pod bridge (the kubelet refuses a
        # loopback node IP, and the API server reaches the kubelet there for pod logs)
        self.node_ip = f"{net}.1"
        _run("ip", "link", "add", self.bridge, "type", "bridge")
        _run("ip", "addr", "add", f"{self.node_ip}/24", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")
        (d / "cni").mkdir()
        (d / "cni" / "10-linklab.conflist").write_text(json.dumps({
            "cniVersion": "0.4.0", "name": self.bridge, "plugins": [
                {"type": "bridge", "bridge": self.bridge, "isGateway": True,
                 "ipMasq": False, "hairpinMode": True,
                 "ipam": {"type": "host-local", "dataDir": str(d / "cni-ipam"),
                          "ranges": [[{"subnet": subnet, "gateway": self.node_ip}]],
                          # the other nodes' pods are reached through this node's bridge
                          "routes": [{"dst": "0.0.0.0/0"}]}},
                {"type": "loopback"}]}))
        (d / "containerd.toml").write_text(f"""version = 2
root = "{d / 'containerd-root'}"
state = "{d / 'containerd-state'}"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "{self.sock}"
[ttrpc]
  address = "{self.sock}.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  # this machine withholds CAP_SYS_RESOURCE: no oom_score_adj below containerd's own
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{d / 'cni'}"
""")
        self._start("containerd", ["containerd", "--config", str(d / "containerd.toml")])
        end = time.monotonic() + 30
        while self.ctr("version", check=False).returncode != 0:
            self._alive()
            if time.monotonic() > end:
                raise RuntimeError("containerd did not answer in 30 s")
            time.sleep(0.3)
        for image in images:
            self.ctr("images", "import", "--no-unpack", str(image))
        self._kubelet()
        return self

    def _kubelet(self) -> None:
        d = self.root
        kroot = d / "kubelet"
        kroot.mkdir()
        # the kubelet wants its root on a shared mount (mount propagation for volumes)
        _run("mount", "--bind", str(kroot), str(kroot))
        self.mounted.append(kroot)
        _run("mount", "--make-rshared", str(kroot))
        cpd = self.cp.root
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "kubelet.key", "-out",
                 "kubelet.csr", "-subj", f"/CN={self.name}", cwd=d)
        (d / "kubelet.ext").write_text(f"subjectAltName=IP:{self.node_ip},DNS:localhost\n")
        _openssl("x509", "-req", "-in", "kubelet.csr", "-CA", str(cpd / "ca.crt"), "-CAkey",
                 str(cpd / "ca.key"), "-CAcreateserial", "-out", "kubelet.crt", "-days", "2",
                 "-extfile", "kubelet.ext", cwd=d)
        port = free_port()
        (d / "kubelet.yaml").write_text(f"""apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {{enabled: false}}
  webhook: {{enabled: false}}
  x509: {{clientCAFile: "{cpd / 'ca.crt'}"}}
authorization: {{mode: AlwaysAllow}}
address: {self.node_ip}
port: {port}
healthzPort: 0
readOnlyPort: 0
tlsCertFile: "{d / 'kubelet.crt'}"
tlsPrivateKeyFile: "{d / 'kubelet.key'}"
containerRuntimeEndpoint: "unix://{self.sock}"
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
failCgroupV1: false
localStorageCapacityIsolation: false
evictionHard: {{memory.available: "0%", nodefs.available: "0%", imagefs.available: "0%",
  nodefs.inodesFree: "0%"}}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
resolvConf: ""
podLogsDir: "{d / 'pod-logs'}"
registerNode: true
makeIPTablesUtilChains: false
""")
        labels = ",".join(f"{k}={v}" for k, v in self.labels.items())
        self._start("kubelet", [
            str(BIN / "kubelet"), f"--config={d / 'kubelet.yaml'}",
            f"--kubeconfig={self.cp.kubeconfig}", f"--root-dir={kroot}",
            f"--hostname-override={self.name}", f"--node-ip={self.node_ip}",
            f"--node-labels={labels}", f"--cert-dir={d / 'pki'}", "-v=1"])
        self.cp.wait_node_ready(self.name, 90, 0.5, alive=self._alive)

    def _alive(self) -> None:
        for name, proc in self.procs:
            if proc.poll() is not None:
                tail = (self.root / f"{name}.log").read_text(errors="replace")[-2500:]
                raise RuntimeError(f"{name} exited {proc.returncode}:\n{tail}")

    def stop(self) -> None:
        self.cp.kubectl("delete", "pods", "--all-namespaces", "--all", "--field-selector",
                        f"spec.nodeName={self.name}", "--wait=true", "--timeout=60s",
                        check=False)
        for name, proc in reversed(self.procs):
            if name == "kubelet" and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=30)
        netns: set[str] = set()
        if self.sock.exists():
            # the network namespaces of this containerd's sandboxes, in case a sandbox is
            # still up (the kubelet stops them asynchronously after the pods are gone)
            for c in self.ctr("containers", "ls", "-q", check=False).stdout.split():
                try:
                    info = json.loads(self.ctr("containers", "info", c, check=False).stdout)
                except ValueError:
                    continue
                for ns in ((info.get("Spec") or {}).get("linux") or {}).get("namespaces") or []:
                    if ns.get("type") == "network" and ns.get("path"):
                        netns.add(ns["path"])
            for task in self.ctr("tasks", "ls", "-q", check=False).stdout.split():
                self.ctr("tasks", "kill", "-s", "SIGKILL", task, check=False)
            time.sleep(0.5)
            for task in self.ctr("tasks", "ls", "-q", check=False).stdout.split():
                self.ctr("tasks", "delete", "-f", task, check=False)
            for c in self.ctr("containers", "ls", "-q", check=False).stdout.split():
                self.ctr("containers", "delete", c, check=False)
        for _name, proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
        # shims of this containerd (its socket path is in their command line)
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if cmd and b"containerd-shim" in cmd[0] and str(self.sock).encode() in cmd:
                    os.kill(int(pid), signal.SIGKILL)
        for path in sorted(netns):
            if Path(path).exists():
                _run("umount", path, check=False)
                Path(path).unlink(missing_ok=True)
        _run("ip", "link", "del", self.bridge, check=False)
        # what the kubelet added to iptables despite makeIPTablesUtilChains: false
        for table, chain in sorted(kube_chains() - self.chains_before):
            rules = _run("iptables", "-t", table, "-S", check=False).stdout.splitlines()
            for rule in rules:
                if rule.startswith("-A ") and f"-j {chain}" in rule:
                    _run("iptables", "-t", table, "-D", *rule[3:].split(), check=False)
            _run("iptables", "-t", table, "-F", chain, check=False)
            _run("iptables", "-t", table, "-X", chain, check=False)
        self.cp.kubectl("delete", "node", self.name, "--wait=false", check=False)
        for path in reversed(self.mounted):
            _run("umount", "-R", str(path), check=False)
        # the cgroups runc made for this containerd's containers (cgroupfs: k8s.io/<id>)
        for hierarchy in Path("/sys/fs/cgroup").iterdir():
            parent = hierarchy / "k8s.io"
            if parent.is_dir() and (hierarchy.name, "k8s.io") not in self.cgroups_before:
                dirs = [d for d in parent.rglob("*") if d.is_dir()] + [parent]
                for d in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
                    try:
                        d.rmdir()  # a cgroup still in use stays (EBUSY)
                    except OSError:
                        pass
        # what containerd mounted under its state (sandbox /dev/shm) and left
        prefix = str(self.root) + "/"
        mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
        for mountpoint in sorted((m for m in mounts if m.startswith(prefix)), key=len,
                                 reverse=True):
            _run("umount", "-l", mountpoint, check=False)


@contextlib.contextmanager
def two_node_cluster(root: Path, tag: str, name: str, label: str) -> Iterator[ControlPlane]:
    """The control plane and two real nodes (``{name}-edge``, ``{name}-robot``, roles
    edge and robot, each labelled ``label``=true), the probe image ``tag`` built and
    imported into both; everything stopped and the image removed on the way out."""
    from linklab.k8s.image import build

    missing = binaries_missing() or (None if PAUSE_BIN.exists() else
                                     f"{PAUSE_BIN} is not built: run scripts/setup.sh")
    if missing:
        raise RuntimeError(missing)
    (root / "cp").mkdir()
    cp = ControlPlane(root / "cp")
    nodes: list[RealNode] = []
    try:
        cp.start()
        build(tag, root / "probe.tar")
        build_pause_image(root / "pause.tar")
        for i, role in enumerate(("edge", "robot")):
            (root / f"node{i}").mkdir()
            node = RealNode(root / f"node{i}", cp, f"{name}-{role}",
                            {"linklab.io/role": role, label: "true"}, index=i)
            nodes.append(node)
            node.start([root / "pause.tar", root / "probe.tar"])
        yield cp
    finally:
        for node in nodes:
            node.stop()
        cp.stop()
        subprocess.run(["podman", "rmi", "-f", tag], capture_output=True)
