"""linklab keystore: the files a DDS-Security keystore needs, and that they work — a
secured Fast DDS pair communicates across a namespace pair, a participant whose
certificate comes from another CA (or that has none) does not; MQTT and Zenoh over TLS
with the keystore's TLS material."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import require_root, require_tool
from linklab.brokers import start_mosquitto
from linklab.brokers.mosquitto import mosquitto_tls_config
from linklab.cli import main
from linklab.security.keystore import create_keystore
from middleware_pair import (
    FASTDDS_PROBE,
    MQTT_PROBE,
    ZENOH_PROBE,
    finish,
    namespace_pair,
    read_records,
    start,
    wait_for_line,
)

SECURED_PAIRS = 10  # the old probe hung in 6 of 20 pairs: 0.7^10 = 3 % to miss it


@pytest.fixture(scope="module")
def keystore(tmp_path_factory):
    root = tmp_path_factory.mktemp("keystore") / "ks"
    return create_keystore(root, tls_names=("10.77.0.1", "10.77.0.2", "127.0.0.1"))


def test_cli_creates_keystore_and_refuses_to_overwrite(tmp_path, capsys):
    assert main(["keystore", "create", str(tmp_path / "ks"), "--enclave", "/a/b", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [e["name"] for e in result["enclaves"]] == ["/a/b"]
    assert main(["keystore", "create", str(tmp_path / "ks")]) == 2
    assert "already holds a keystore" in capsys.readouterr().err
    assert main(["keystore", "create", str(tmp_path / "k2"), "--enclave", "robot"]) == 2
    assert "--enclave" in capsys.readouterr().err


def test_create_into_a_missing_or_unwritable_parent_is_one_line_and_leaves_nothing(
        tmp_path, capsys):
    assert main(["keystore", "create", str(tmp_path / "missing" / "ks")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("linklab: error: DIR:") and "does not exist" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "missing").exists()
    (tmp_path / "file").write_text("")
    assert main(["keystore", "create", str(tmp_path / "file" / "ks")]) == 2
    assert "is not a directory" in capsys.readouterr().err


@pytest.mark.integration
def test_create_into_an_unwritable_enclaves_directory_leaves_nothing(tmp_path):
    # a keystore directory whose enclaves/ cannot be written: refused half-way, and what
    # this call made (public/, private/) is removed again; enclaves/ was there before
    require_root()
    root = tmp_path / "ks"
    (root / "enclaves").mkdir(parents=True)
    os.chmod(tmp_path, 0o755)
    os.chown(root, 65534, 65534)
    os.chmod(root / "enclaves", 0o555)
    code = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           sys.executable, "-m", "linklab.cli", "keystore", "create", str(root)],
                          capture_output=True, text=True)
    assert code.returncode == 2, code.stderr
    assert len(code.stderr.strip().splitlines()) == 1 and "Permission denied" in code.stderr
    assert sorted(p.name for p in root.iterdir()) == ["enclaves"]


def test_show_reads_a_keystore_back_and_names_a_damaged_file(keystore, tmp_path, capsys):
    assert main(["keystore", "show", str(keystore.root), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [e["name"] for e in shown["enclaves"]] == ["/linklab/edge", "/linklab/robot"]
    copy = tmp_path / "copy"
    shutil.copytree(keystore.root, copy)
    robot_key = copy / "enclaves" / "linklab" / "robot" / "key.pem"
    robot_key.write_bytes((copy / "enclaves" / "linklab" / "edge" / "key.pem").read_bytes())
    assert main(["keystore", "show", str(copy)]) == 2
    err = capsys.readouterr().err
    assert "does not belong" in err and len(err.strip().splitlines()) == 1


def test_private_keys_are_owner_only(keystore):
    keys = keystore.private_files()
    # CA x3 (private/), identity key and TLS key per enclave
    assert len(keys) == 3 + 2 * len(keystore.enclaves)
    for key in keys:
        assert stat.S_IMODE(key.stat().st_mode) == 0o600, key


@pytest.mark.native
def test_documents_are_signed_by_the_ca_and_match_the_identity(keystore):
    require_tool("openssl")
    for enclave in keystore.enclaves:
        d = enclave.directory
        for signed in ("governance.p7s", "permissions.p7s"):
            verify = subprocess.run(["openssl", "smime", "-verify", "-in", str(d / signed),
                                     "-CAfile", str(d / "permissions_ca.cert.pem"),
                                     "-out", "/dev/null"], capture_output=True, text=True)
            assert verify.returncode == 0, verify.stderr
        chain = subprocess.run(["openssl", "verify", "-CAfile", str(d / "identity_ca.cert.pem"),
                                str(d / "cert.pem")], capture_output=True, text=True)
        assert chain.returncode == 0, chain.stderr
        subject = subprocess.run(["openssl", "x509", "-noout", "-subject", "-nameopt", "RFC2253",
                                  "-in", str(d / "cert.pem")], capture_output=True, text=True)
        granted = ET.parse(d / "permissions.xml").find("permissions/grant/subject_name").text
        assert subject.stdout.strip() == f"subject={granted}" == f"subject=CN={enclave.name}"


def test_fastdds_profile_selects_the_three_builtin_plugins(keystore):
    root = ET.parse(keystore.enclaves[0].fastdds_profile).getroot()
    ns = {"p": "http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles"}
    props = {p.find("p:name", ns).text: p.find("p:value", ns).text
             for p in root.iterfind(".//p:property", ns)}
    assert props["dds.sec.auth.plugin"] == "builtin.PKI-DH"
    assert props["dds.sec.access.plugin"] == "builtin.Access-Permissions"
    assert props["dds.sec.crypto.plugin"] == "builtin.AES-GCM-GMAC"
    assert props["dds.sec.auth.builtin.PKI-DH.private_key"].startswith("file:///")


def _fastdds(netns, role, records, profile=None, domain=61, count=10):
    argv = [FASTDDS_PROBE, role, "--topic", "secure", "--type", "Array1k", "--domain", domain,
            "--count", count, "--records", records, "--match-timeout", 10]
    if role == "pub":
        argv += ["--rate", 20]
    if profile:
        argv += ["--profile", profile]
    return start(netns, argv)


@pytest.mark.integration
def test_secured_fastdds_pair_communicates(keystore, tmp_path):
    require_root()
    assert FASTDDS_PROBE.exists(), f"{FASTDDS_PROBE} is not built: run scripts/setup.sh"
    robot, edge = keystore.enclave("/linklab/robot"), keystore.enclave("/linklab/edge")
    # The Fast DDS probe's subscriber used to deadlock now and then during the security
    # key exchange (lock-order inversion between its poll and the listener, fixed in
    # probes/fastdds). No retry: every one of several secured pairs in a row must
    # exchange all its samples, or the fix does not hold.
    for attempt in range(SECURED_PAIRS):
        with namespace_pair(f"ks{attempt}") as pair:
            sub = _fastdds(pair.edge, "sub", tmp_path / f"s{attempt}.bin",
                           edge.fastdds_profile, domain=63)
            pub = _fastdds(pair.robot, "pub", tmp_path / f"p{attempt}.bin",
                           robot.fastdds_profile, domain=63)
            pub_result, sub_result = finish(pub, 30), finish(sub, 30)
        assert pub_result["errors"] == [] and sub_result["errors"] == [], \
            sub_result["_stderr"][-800:]
        assert [r[0] for r in read_records(tmp_path / f"s{attempt}.bin")[1]] == list(range(10))
        # the secured participants use UDP only (no shared memory across the namespaces)
        transports = pub_result["applied"]["participant"]["transports"]
        assert [t["kind"] for t in transports] == ["UDPv4"]


@pytest.mark.integration
def test_participant_without_valid_certificate_is_refused(keystore, tmp_path):
    require_root()
    assert FASTDDS_PROBE.exists(), f"{FASTDDS_PROBE} is not built: run scripts/setup.sh"
    # same enclave name, certificate from another CA
    rogue = create_keystore(tmp_path / "rogue", enclaves=("/linklab/robot",))
    edge = keystore.enclave("/linklab/edge")
    with namespace_pair("kr") as pair:
        sub = _fastdds(pair.edge, "sub", tmp_path / "s.bin", edge.fastdds_profile, domain=62)
        intruders = [
            _fastdds(pair.robot, "pub", tmp_path / "rogue.bin", rogue.enclaves[0].fastdds_profile,
                     domain=62),
            _fastdds(pair.robot, "pub", tmp_path / "plain.bin", None, domain=62),  # no security
        ]
        results = [finish(p, 60) for p in intruders]
        sub_result = finish(sub, 60)
    for result in results:
        assert result["end_reason"] == "no_match" and result["samples"] == 0, result
    assert sub_result["end_reason"] == "no_match" and sub_result["samples"] == 0
    assert read_records(tmp_path / "s.bin")[1] == []


@pytest.mark.integration
def test_mqtt_over_tls_with_keystore_certificates(keystore, tmp_path):
    require_root()
    robot, edge = keystore.enclave("/linklab/robot"), keystore.enclave("/linklab/edge")
    with namespace_pair("mt") as pair:
        broker = start_mosquitto(mosquitto_tls_config(edge, pair.edge_addr), tmp_path,
                                 netns=pair.edge)
        try:
            common = ["--topic", "secure", "--type", "Array1k", "--qos", "reliable",
                      "--peer", f"{pair.edge_addr}:8883"]
            sub = start(pair.edge, [MQTT_PROBE, "sub", *common, "--profile", edge.mqtt_profile,
                                    "--count", 20, "--duration", 20, "--records", tmp_path / "s"])
            wait_for_line(sub, "subscribed")
            pub = start(pair.robot, [MQTT_PROBE, "pub", *common, "--profile", robot.mqtt_profile,
                                     "--count", 20, "--rate", 50, "--records", tmp_path / "p"])
            # a client without a certificate is refused by the broker
            bare = tmp_path / "bare.conf"
            bare.write_text(f"cafile={edge.tls_ca}\n")
            intruder = start(pair.robot, [MQTT_PROBE, "pub", *common, "--profile", bare,
                                          "--count", 1, "--rate", 10, "--records", tmp_path / "x"])
            pub_result, _, intruder_result = finish(pub), finish(sub), finish(intruder)
        finally:
            broker.stop()
    assert pub_result["applied"]["transport"] == "tls" and pub_result["errors"] == []
    assert [r[0] for r in read_records(tmp_path / "s")[1]] == list(range(20))
    assert intruder_result["samples"] == 0 and intruder_result["errors"]


@pytest.mark.integration
def test_zenoh_over_tls_with_keystore_certificates(keystore, tmp_path):
    require_root()
    robot, edge = keystore.enclave("/linklab/robot"), keystore.enclave("/linklab/edge")
    with namespace_pair("zt") as pair:
        endpoint = f"tls/{pair.edge_addr}:7448"
        common = ["--topic", "secure", "--type", "Array4k", "--mode", "peer"]
        sub = start(pair.edge, [*ZENOH_PROBE, "sub", *common, "--listen", endpoint,
                                "--profile", edge.zenoh_profile, "--count", 20,
                                "--duration", 30, "--records", tmp_path / "s"])
        wait_for_line(sub, "subscribed")
        pub = start(pair.robot, [*ZENOH_PROBE, "pub", *common, "--peer", endpoint,
                                 "--profile", robot.zenoh_profile, "--count", 20, "--rate", 50,
                                 "--records", tmp_path / "p"])
        pub_result, _ = finish(pub), finish(sub)
    assert pub_result["errors"] == [], pub_result["_stderr"][-2000:]
    assert pub_result["applied"]["transport"] == ["tls"]
    assert [r[0] for r in read_records(tmp_path / "s")[1]] == list(range(20))
