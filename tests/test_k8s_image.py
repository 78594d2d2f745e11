"""The linklab probe image, built offline here, runs probe pairs in containers (podman):
Fast DDS across two containers' network namespaces (unicast peer), and MQTT with the
image's mosquitto in one container; the records come back through the log bundle."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from linklab.bench import metrics as M
from linklab.k8s.image import build
from linklab.k8s.podrun import read_bundle

pytestmark = pytest.mark.integration

TAG = f"localhost/linklab-probe:test-{os.getpid()}"
# podman's default rlimits exceed what this container may set (no CAP_SYS_RESOURCE)
LIMITS = ["--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"]


def podman(*args: str, check: bool = True, timeout: float = 120) -> str:
    done = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"podman {' '.join(args[:3])}: {done.stderr.strip()[-500:]}")
    return done.stdout


@pytest.fixture(scope="module")
def image():
    build(TAG)
    yield TAG
    podman("rmi", "-f", TAG, check=False)


def probe(role: str, name: str, peers: list[str], count: int = 50) -> dict:
    argv = [f"/opt/linklab/bin/linklab-probe-{name}", role, "--topic", f"img{os.getpid()}",
            "--type", "Bytes", "--size", "512", "--rate", "100", "--qos", "reliable",
            "--records", f"/records/{role}.bin", "--count", str(count), "--match-timeout", "20"]
    if name != "mqtt":  # MQTT has no history cache (the probe refuses --history)
        argv += ["--history", "keep_all"]
    for peer in peers:
        argv += ["--peer", peer]
    argv += ["--linger", "5"] if role == "pub" else ["--idle-timeout", "20"]
    return {"name": role, "role": role, "argv": argv, "wait_tcp": None,
            "delay_s": 0.3 if role == "pub" else 0.0}


def spec(container: str, processes: list[dict]) -> str:
    return json.dumps({"version": 1, "container": container, "deadline_s": 60,
                       "records_dir": "/records", "processes": processes})


def run_container(image: str, name: str, pod_spec: str, join: str | None = None) -> None:
    # no network but loopback (no bridge, no firewall rules on this machine); ``join``:
    # share that container's network namespace, as two containers of a k8s pod do
    where = ["--network", f"container:{join}"] if join else ["--network", "none"]
    podman("run", "-d", "--name", name, *where, *LIMITS, "-e", f"LINKLAB_POD_SPEC={pod_spec}",
           image, "python3", "/opt/linklab/podrun.py")


def finish(name: str) -> dict[str, bytes]:
    code = podman("wait", name, timeout=90).strip()
    log = podman("logs", name)
    files = read_bundle(log)
    assert code == "0", f"{name} exited {code}: {files.get('sub.log', b'')[-300:]!r}"
    return files


def test_fastdds_pair_in_two_containers_of_a_pod(image, tmp_path: Path):
    sub, pub = f"ll{os.getpid()}-sub", f"ll{os.getpid()}-pub"
    try:
        run_container(image, sub, spec("sub", [probe("sub", "fastdds", [])]))
        run_container(image, pub, spec("pub", [probe("pub", "fastdds", ["127.0.0.1"])]), sub)
        sub_files, pub_files = finish(sub), finish(pub)
    finally:
        podman("rm", "-f", pub, sub, check=False)
    (tmp_path / "sub.bin").write_bytes(sub_files["sub.bin"])
    (tmp_path / "pub.bin").write_bytes(pub_files["pub.bin"])
    _, received = M.read_records(tmp_path / "sub.bin")
    _, sent = M.read_records(tmp_path / "pub.bin")
    assert len(sent) == 50 and sorted(received["seq"]) == sorted(sent["seq"])
    info = json.loads(sub_files["pod-sub.json"])
    report = info["processes"]["sub"]
    assert report["exit_code"] == 0 and report["cpu_s"] > 0 and report["rss_peak_bytes"] > 0
    assert info["clock"]["boot_id"] and "lo" in info["before"]["interfaces"]
    # the data crossed the pod's loopback
    lo = info["after"]["interfaces"]["lo"]["rx_bytes"] - info["before"]["interfaces"]["lo"][
        "rx_bytes"]
    assert lo > 50 * 512


def test_mqtt_with_the_images_broker_in_one_container(image, tmp_path: Path):
    name = f"ll{os.getpid()}-mqtt"
    conf = ("per_listener_settings false\npersistence false\nuser root\nlog_dest stderr\n"
            "allow_anonymous true\nlistener 1883 0.0.0.0\n")
    broker = {"name": "broker", "role": "broker", "wait_tcp": None, "delay_s": 0.0,
              "argv": ["sh", "-c", f"printf '{conf}' > /tmp/m.conf && exec mosquitto -c "
                       "/tmp/m.conf"]}
    subp, pubp = probe("sub", "mqtt", ["127.0.0.1:1883"]), probe("pub", "mqtt", ["127.0.0.1:1883"])
    subp["wait_tcp"] = pubp["wait_tcp"] = "127.0.0.1:1883"
    started = time.monotonic()
    try:
        run_container(image, name, spec("probes", [broker, subp, pubp]))
        files = finish(name)
    finally:
        podman("rm", "-f", name, check=False)
    for role in ("pub", "sub"):
        (tmp_path / f"{role}.bin").write_bytes(files[f"{role}.bin"])
    assert len(M.read_records(tmp_path / "sub.bin")[1]) == 50
    info = json.loads(files["pod-probes.json"])
    assert info["processes"]["broker"]["signalled_by_runner"]  # stopped after the clients
    assert time.monotonic() - started < 60
