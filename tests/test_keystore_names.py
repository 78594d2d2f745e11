"""linklab keystore create: every user-given name that reaches a certificate, a file name
or a profile (--tls-address, --enclave, DIR) is checked before anything is written; a
refused one is a single line naming the argument and what is accepted, and leaves no
half-made keystore behind."""

from __future__ import annotations

import ipaddress
import os

import pytest
from cryptography import x509
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import examples
from linklab.cli import main
from linklab.errors import UsageError
from linklab.security import keystore as keystore_module
from linklab.security import pki
from linklab.security.keystore import create_keystore, load_keystore
from linklab.security.names import ENCLAVE_MAX, check_tls_name

BAD_ADDRESSES = [
    "bad address;rm",        # the reported one: it used to become DNS:bad address;rm
    "",
    "a b", "$(reboot)", "x\ny", "host_name", "*.example.com", "a..b", "a.b.", ".a",
    "-a.b", "a-.b", "a" * 64, ".".join(["a" * 63] * 4) + ".ab",  # 64-character label; 256
    "300.1.1.1", "10.0.0", "1.2.3.4.5", "010.1.1.1",              # #.#.#.# but no IPv4
    "fe80::1%eth0", "::g", "ünicode.example",
]
GOOD_ADDRESSES = ["10.0.0.2", "::1", "fd00::7", "localhost", "robot1", "edge-2.lab.example.org",
                  "1.example", ".".join(["a" * 63] * 3) + ".abcdefghijklmnopqrstuvwxyz0123456789ab"]


def _san(cert_path) -> list[str]:
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    alt = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return [str(name.value) for name in alt]


def _refused(capsys, argv, argument) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"linklab: error: {argument}: "), err
    assert len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize("address", BAD_ADDRESSES)
def test_a_bad_tls_address_is_refused_and_nothing_is_written(tmp_path, capsys, address):
    new, empty = tmp_path / "new", tmp_path / "empty"
    empty.mkdir()
    for target in (new, empty):
        err = _refused(capsys, ["keystore", "create", str(target), "--tls-address", "10.0.0.2",
                                "--tls-address", address], "--tls-address")
        assert repr(address) in err and "RFC 1123" in err and "IPv4/IPv6 address" in err
    assert not new.exists() and list(empty.iterdir()) == []


def test_good_addresses_reach_the_certificate_as_given(tmp_path, capsys):
    argv = ["keystore", "create", str(tmp_path / "ks"), "--enclave", "/r", "--json"]
    for address in GOOD_ADDRESSES:
        argv += ["--tls-address", address]
    assert main(argv) == 0, capsys.readouterr().err
    assert _san(tmp_path / "ks" / "enclaves" / "r" / "tls" / "cert.pem") == [
        str(ipaddress.ip_address(a)) if a in ("10.0.0.2", "::1", "fd00::7") else a
        for a in GOOD_ADDRESSES]


def test_enclave_names_are_checked_whole_and_fit_a_common_name(tmp_path, capsys):
    longest = "/" + "e" * (ENCLAVE_MAX - 1)
    for name in ("/a/b\n", longest + "e", "/a/../b", "/a b"):
        err = _refused(capsys, ["keystore", "create", str(tmp_path / "ks"), "--enclave", name],
                       "--enclave")
        assert "at most 60" in err or "letters, digits, _" in err
        assert not (tmp_path / "ks").exists()
    assert main(["keystore", "create", str(tmp_path / "ks"), "--enclave", longest]) == 0
    assert load_keystore(tmp_path / "ks").enclaves[0].name == longest


def test_a_directory_that_cannot_go_into_the_profiles_is_refused(tmp_path, capsys):
    # the keystore's path is written into mqtt_tls.conf (key=value lines): a newline would
    # end the cafile line there and start another
    for name in ("ks\ncafile=evil.pem", "ks\r", os.fsdecode(b"ks\xff")):
        err = _refused(capsys, ["keystore", "create", str(tmp_path / name)], "DIR")
        assert "control character" in err or "UTF-8" in err
    assert list(tmp_path.iterdir()) == []


def test_an_interrupted_creation_removes_what_it_made(tmp_path, monkeypatch):
    issued = []

    def interrupt_on_the_third(*args, **kwargs):  # Ctrl-C while the second enclave is made
        issued.append(args[1])
        if len(issued) == 3:
            raise KeyboardInterrupt
        return real_issue(*args, **kwargs)

    real_issue = pki.issue
    monkeypatch.setattr(keystore_module.pki, "issue", interrupt_on_the_third)
    with pytest.raises(KeyboardInterrupt):
        create_keystore(tmp_path / "ks")
    assert not (tmp_path / "ks").exists() and len(issued) == 3
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "mine.txt").write_text("mine")
    issued.clear()
    with pytest.raises(KeyboardInterrupt):
        create_keystore(tmp_path / "kept")
    assert [p.name for p in (tmp_path / "kept").iterdir()] == ["mine.txt"]


@settings(derandomize=True, max_examples=examples(400), deadline=None, database=None)
@given(name=st.one_of(st.text(max_size=70),
                      st.from_regex(r"[a-z0-9-]{1,12}(\.[a-z0-9-]{1,12}){0,3}", fullmatch=True),
                      st.ip_addresses().map(str)))
def test_a_tls_name_is_refused_in_one_line_or_reaches_the_certificate_unchanged(name):
    try:
        check_tls_name(name)
    except UsageError as error:
        assert "\n" not in str(error) and str(error).startswith("--tls-address: ")
        return
    ca = pki.make_ca("test CA", pki.now_utc())
    leaf = pki.issue(ca, "leaf", pki.now_utc(), tls_names=(name,))
    alt = leaf.certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    (value,) = [n.value for n in alt]
    assert value == (ipaddress.ip_address(name) if isinstance(value, ipaddress._BaseAddress)
                     else name)
    assert isinstance(value, ipaddress._BaseAddress) or all(
        0 < len(label) < 64 and not label.startswith("-") and not label.endswith("-")
        for label in name.split("."))
