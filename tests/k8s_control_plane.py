"""A real Kubernetes control plane for the tests: etcd (Debian's etcd-server), and
kube-apiserver, kube-scheduler, kube-controller-manager v1.33.13 and kwok v0.8.0 built by
scripts/k8s-build.sh (cached under ~/.cache/linklab/k8s). kwok turns labelled Node
objects into fake nodes (it never runs a container); the scheduler's bindings are real.

Everything listens on 127.0.0.1 on free ports and lives in one temporary directory, so
several test sessions can run side by side; stop() ends only the processes it started.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

K8S_VERSION = "1.33.13"
CACHE = Path(os.environ.get("LINKLAB_K8S_CACHE", Path.home() / ".cache/linklab/k8s"))
BIN = CACHE / f"v{K8S_VERSION}" / "bin"
STAGES = Path(__file__).parent / "k8s" / "kwok-stages.yaml"
TOKEN = "linklab-test-admin-token"
NODE_LABEL = "linklab-test/kwok"


def binaries_missing() -> str | None:
    for name in ("kube-apiserver", "kube-scheduler", "kube-controller-manager", "kwok"):
        if not (BIN / name).exists():
            return f"{BIN / name} is not built: run scripts/setup.sh (scripts/k8s-build.sh)"
    if not shutil.which("etcd"):
        return "etcd is not installed (Debian etcd-server; scripts/setup.sh)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certs(d: Path) -> None:
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
             "ca.crt", "-days", "2", "-subj", "/CN=linklab-test-ca", cwd=d)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "apiserver.key", "-out",
             "apiserver.csr", "-subj", "/CN=kube-apiserver", cwd=d)
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost,"
                               "DNS:kubernetes.default.svc\n")
    _openssl("x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "apiserver.crt", "-days", "2", "-extfile", "san.ext",
             cwd=d)
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=d)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=d)


def kubeconfig_text(server: str, ca: Path, namespace: str = "default") -> str:
    return f"""apiVersion: v1
kind: Config
clusters:
- name: linklab-test
  cluster: {{server: "{server}", certificate-authority: "{ca}"}}
users:
- name: admin
  user: {{token: {TOKEN}}}
contexts:
- name: linklab-test
  context: {{cluster: linklab-test, user: admin, namespace: {namespace}}}
current-context: linklab-test
"""


class ControlPlane:
    def __init__(self, root: Path):
        self.root = root
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.kubeconfig = root / "kubeconfig"
        self.server = ""

    def _start(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.root / f"{name}.log", "wb")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.procs.append((name, proc))
        return proc

    def start(self) -> ControlPlane:
        d = self.root
        make_certs(d)
        (d / "tokens.csv").write_text(f"{TOKEN},admin,admin,system:masters\n")
        etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
        kwok_port = free_port()
        self._start("etcd", ["etcd", "--data-dir", str(d / "etcd"), "--name", "test",
                             "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
                             "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
                             "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
                             "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
                             "--initial-cluster", f"test=http://127.0.0.1:{peer_port}",
                             "--log-level", "warn"])
        self.server = f"https://127.0.0.1:{api_port}"
        self._start("kube-apiserver", [
            str(BIN / "kube-apiserver"), f"--etcd-servers=http://127.0.0.1:{etcd_port}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={api_port}", f"--tls-cert-file={d / 'apiserver.crt'}",
            f"--tls-private-key-file={d / 'apiserver.key'}", f"--client-ca-file={d / 'ca.crt'}",
            f"--token-auth-file={d / 'tokens.csv'}", "--authorization-mode=Node,RBAC",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={d / 'sa.pub'}",
            f"--service-account-signing-key-file={d / 'sa.key'}",
            "--service-cluster-ip-range=10.255.0.0/24",
            "--kubelet-preferred-address-types=InternalIP",
            f"--kubelet-client-certificate={d / 'apiserver.crt'}",
            f"--kubelet-client-key={d / 'apiserver.key'}",
            "--enable-priority-and-fairness=false", "--profiling=false", "-v=1"])
        self.kubeconfig.write_text(kubeconfig_text(self.server, d / "ca.crt"))
        self._wait_api()
        common = [f"--kubeconfig={self.kubeconfig}", "--leader-elect=false"]
        self._start("kube-scheduler", [str(BIN / "kube-scheduler"), *common,
                                       "--bind-address=127.0.0.1",
                                       f"--secure-port={free_port()}"])
        self._start("kube-controller-manager", [
            str(BIN / "kube-controller-manager"), *common, "--bind-address=127.0.0.1",
            f"--secure-port={free_port()}",
            f"--service-account-private-key-file={d / 'sa.key'}",
            f"--root-ca-file={d / 'ca.crt'}", "--use-service-account-credentials=false",
            "--controllers=serviceaccount,serviceaccount-token,nodelifecycle,namespace,"
            "garbagecollector,podgc", "--node-monitor-grace-period=60s"])
        self._start("kwok", [
            str(BIN / "kwok"), f"--kubeconfig={self.kubeconfig}", "--manage-all-nodes=false",
            f"--manage-nodes-with-label-selector={NODE_LABEL}", f"--config={STAGES}",
            "--node-ip=127.0.0.1", f"--server-address=127.0.0.1:{kwok_port}",
            f"--node-port={kwok_port}", "--cidr=10.244.0.0/16"])
        self._wait_default_sa()
        return self

    def kubectl(self, *args: str, input: str | None = None, check: bool = True
                ) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / "kubectl"), f"--kubeconfig={self.kubeconfig}", *args],
                              input=input, capture_output=True, text=True, check=check,
                              timeout=60)

    def _alive(self) -> None:
        for name, proc in self.procs:
            if proc.poll() is not None:
                tail = (self.root / f"{name}.log").read_text(errors="replace")[-1500:]
                raise RuntimeError(f"{name} exited {proc.returncode}:\n{tail}")

    def _wait_api(self, timeout: float = 60) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self._alive()
            probe = subprocess.run(["curl", "-sk", "-H", f"Authorization: Bearer {TOKEN}",
                                    f"{self.server}/readyz"], capture_output=True, text=True)
            if probe.stdout.strip() == "ok":
                return
            time.sleep(0.3)
        raise RuntimeError("kube-apiserver did not become ready in 60 s")

    def _wait_default_sa(self, timeout: float = 60) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self._alive()
            if self.kubectl("get", "serviceaccount", "default", check=False).returncode == 0:
                return
            time.sleep(0.3)
        raise RuntimeError("the default service account did not appear in 60 s")

    def add_node(self, name: str, labels: dict[str, str]) -> None:
        """A fake node kwok runs (Ready, with an InternalIP), carrying ``labels``."""
        text = "\n".join(f"    {k}: \"{v}\"" for k, v in {**labels, NODE_LABEL: "true",
                                                         "kubernetes.io/hostname": name}.items())
        self.kubectl("apply", "-f", "-", input=f"""apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels:
{text}
spec:
  taints: []
status:
  allocatable: {{cpu: "32", memory: 64Gi, pods: "110"}}
  capacity: {{cpu: "32", memory: 64Gi, pods: "110"}}
""")
        self.wait_node_ready(name, 30, 0.2)

    def wait_node_ready(self, name: str, timeout_s: float, poll_s: float,
                        alive=lambda: None) -> None:
        """Until node ``name`` reports Ready; ``alive()`` raises if what runs it died."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            alive()
            out = self.kubectl("get", "node", name, "-o",
                               "jsonpath={.status.conditions[?(@.type=='Ready')].status}",
                               check=False).stdout
            if out == "True":
                return
            time.sleep(poll_s)
        raise RuntimeError(f"node {name} did not become Ready in {timeout_s:g} s")

    def stop(self) -> None:
        for _name, proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for _name, proc in reversed(self.procs):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
