"""``linklab keystore create DIR``: a DDS-Security keystore laid out like SROS 2's
(``ros2 security create_keystore`` + ``create_enclave``), plus TLS material for MQTT and
Zenoh signed by the same CA.

    DIR/public/{ca,identity_ca,permissions_ca}.cert.pem
    DIR/private/{ca,identity_ca,permissions_ca}.key.pem            (mode 0600)
    DIR/enclaves/governance.xml, governance.p7s
    DIR/enclaves/<enclave>/cert.pem key.pem(0600) identity_ca.cert.pem
        permissions_ca.cert.pem governance.p7s permissions.xml permissions.p7s
        fastdds_security.xml       Fast DDS profile: PKI-DH + Permissions + AES-GCM-GMAC
        cyclonedds_security.xml    Cyclone DDS configuration: the same three plugins
        tls/cert.pem tls/key.pem(0600) tls/ca.cert.pem
        mqtt_tls.conf              linklab-probe-mqtt --profile (MQTT over TLS)
        zenoh_tls.json5            linklab zenoh probe --profile (Zenoh over TLS)
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from linklab.errors import UsageError
from linklab.security import cyclonedds, documents, pki, profiles
from linklab.security.enclave import Enclave
from linklab.security.names import (
    ENCLAVE_NAME,
    check_enclave_name,
    check_keystore_dir,
    check_tls_name,
)

__all__ = ["Keystore", "check_enclave_name", "create_keystore", "load_keystore"]

DEFAULT_ENCLAVES = ("/linklab/robot", "/linklab/edge")
CA_NAME = "linklab keystore CA"
KEYSTORE_DIRS = ("public", "private", "enclaves")


@dataclass(frozen=True)
class Keystore:
    root: Path
    enclaves: tuple[Enclave, ...]

    @property
    def ca_cert(self) -> Path:
        return self.root / "public" / "ca.cert.pem"

    def enclave(self, name: str) -> Enclave:
        for enclave in self.enclaves:
            if enclave.name == name:
                return enclave
        raise UsageError(f"no enclave {name!r} in {self.root}", argument="--enclave")

    def private_files(self) -> list[Path]:
        return sorted(p for p in self.root.rglob("*key.pem"))


def create_keystore(root: Path, enclaves: tuple[str, ...] = DEFAULT_ENCLAVES,
                    tls_names: tuple[str, ...] = ("127.0.0.1", "localhost"),
                    domains: documents.DomainRange = documents.DomainRange()) -> Keystore:
    """Create a keystore in ``root`` (which must not hold one yet) with ``enclaves``.
    Every name is checked before anything is written; whatever stops the creation half-way
    (a write error, Ctrl-C) removes what this call made."""
    for name in enclaves:
        check_enclave_name(name)
    if not enclaves:
        raise UsageError("at least one enclave is needed", argument="--enclave")
    if len(set(enclaves)) != len(enclaves):
        raise UsageError("enclave names must be distinct", argument="--enclave")
    for name in tls_names:
        check_tls_name(name)
    if not tls_names:
        raise UsageError("at least one address is needed", argument="--tls-address")
    try:
        check_keystore_dir(root)
        _check_target(root)
    except OSError as error:
        raise UsageError(f"{root}: {error.strerror or error} ({error.filename or root})",
                         argument="DIR") from None
    ours = [root] if not root.exists() else [root / sub for sub in KEYSTORE_DIRS
                                             if not (root / sub).exists()]
    try:
        return _create(root, enclaves, tls_names, domains)
    except BaseException as error:
        for target in ours:  # what this call made, nothing that was there before
            shutil.rmtree(target, ignore_errors=True)
        if not isinstance(error, OSError):
            raise
        where = error.filename or root
        raise UsageError(f"cannot write the keystore at {where}: {error.strerror or error}; "
                         "nothing was left behind", argument="DIR") from None


def _check_target(root: Path) -> None:
    """DIR must be new (or an empty directory / one without a keystore) in an existing,
    writable directory; one-line UsageError otherwise, before anything is written."""
    if (root / "public" / "ca.cert.pem").exists():
        raise UsageError(f"{root} already holds a keystore (remove it or choose another)",
                         argument="DIR")
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root} exists and is not a directory", argument="DIR")
    parent = root.absolute().parent
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist (create it first)"
        raise UsageError(f"{root}: the directory {parent} {what}", argument="DIR")
    target = root if root.exists() else parent
    if not os.access(target, os.W_OK | os.X_OK):
        raise UsageError(f"{root}: {target} is not writable for this user", argument="DIR")
    for sub in KEYSTORE_DIRS:
        if (root / sub).exists() and not (root / sub).is_dir():
            raise UsageError(f"{root / sub} exists and is not a directory", argument="DIR")


def _create(root: Path, enclaves: tuple[str, ...], tls_names: tuple[str, ...],
            domains: documents.DomainRange) -> Keystore:
    start = pki.now_utc()
    ca = pki.make_ca(CA_NAME, start)
    ca_cert, ca_key = pki.certificate_pem(ca), pki.private_key_pem(ca)
    # One CA serves as identity CA and permissions CA, as in SROS 2's default keystore.
    for stem in ("ca", "identity_ca", "permissions_ca"):
        pki.write_public(root / "public" / f"{stem}.cert.pem", ca_cert)
        pki.write_private(root / "private" / f"{stem}.key.pem", ca_key)
    governance = documents.governance_xml(domains).encode()
    pki.write_public(root / "enclaves" / "governance.xml", governance)
    governance_p7s = pki.sign_smime(governance, ca)
    pki.write_public(root / "enclaves" / "governance.p7s", governance_p7s)
    made = tuple(_create_enclave(root, ca, name, start, tls_names, domains, governance_p7s)
                 for name in enclaves)
    return Keystore(root=root, enclaves=made)


def _create_enclave(root: Path, ca: pki.Identity, name: str, start, tls_names, domains,
                    governance_p7s: bytes) -> Enclave:
    directory = root / "enclaves" / name.strip("/")
    identity = pki.issue(ca, name, start)
    pki.write_public(directory / "cert.pem", pki.certificate_pem(identity))
    pki.write_private(directory / "key.pem", pki.private_key_pem(identity))
    ca_cert = pki.certificate_pem(ca)
    pki.write_public(directory / "identity_ca.cert.pem", ca_cert)
    pki.write_public(directory / "permissions_ca.cert.pem", ca_cert)
    pki.write_public(directory / "governance.p7s", governance_p7s)
    permissions = documents.permissions_xml(
        subject_name=identity.subject, grant_name=name, not_before=start,
        not_after=start + pki.VALIDITY, domains=domains).encode()
    pki.write_public(directory / "permissions.xml", permissions)
    pki.write_public(directory / "permissions.p7s", pki.sign_smime(permissions, ca))
    tls = pki.issue(ca, f"{name} tls", start, tls_names=tuple(tls_names))
    pki.write_public(directory / "tls" / "cert.pem", pki.certificate_pem(tls))
    pki.write_private(directory / "tls" / "key.pem", pki.private_key_pem(tls))
    pki.write_public(directory / "tls" / "ca.cert.pem", ca_cert)
    enclave = Enclave(name=name, directory=directory.resolve())
    pki.write_public(enclave.fastdds_profile, profiles.fastdds_security_xml(enclave).encode())
    pki.write_public(enclave.cyclonedds_profile, cyclonedds.security_xml(
        enclave, cyclonedds.plugin_directory()).encode())
    pki.write_public(enclave.mqtt_profile, profiles.mqtt_client_profile(enclave).encode())
    pki.write_public(enclave.zenoh_profile, profiles.zenoh_tls_json5(enclave).encode())
    return enclave


def load_keystore(root: Path) -> Keystore:
    """An existing keystore (as ``create_keystore`` makes it), checked: the CA certificate
    and key, and for every enclave its certificate (issued by that CA), key and profiles.
    Raises a one-line UsageError naming the file and what is wrong."""
    root = Path(root)
    if not (root / "public" / "ca.cert.pem").is_file():
        raise UsageError(f"{root} is not a keystore (no public/ca.cert.pem)", argument="DIR")
    ca = _identity(root / "public" / "ca.cert.pem", root / "private" / "ca.key.pem")
    found = []
    try:
        certs = sorted((root / "enclaves").rglob("cert.pem"))
    except OSError as error:
        raise UsageError(f"{root / 'enclaves'}: {error.strerror or error}",
                         argument="DIR") from None
    for cert in certs:
        directory = cert.parent
        if directory.name == "tls":
            continue
        name = "/" + directory.relative_to(root / "enclaves").as_posix()
        if not ENCLAVE_NAME.fullmatch(name):
            raise UsageError(f"{directory}: {name!r} is not an enclave name", argument="DIR")
        identity = _identity(cert, directory / "key.pem")
        if identity.certificate.issuer != ca.certificate.subject:
            raise UsageError(f"{cert} was not issued by this keystore's CA", argument="DIR")
        enclave = Enclave(name=name, directory=directory.resolve())
        for needed in (enclave.fastdds_profile, enclave.tls_cert, enclave.tls_key,
                       directory / "permissions.p7s", directory / "governance.p7s"):
            if not needed.is_file():
                raise UsageError(f"enclave {name}: {needed} is missing", argument="DIR")
        found.append(enclave)
    if not found:
        raise UsageError(f"{root} holds no enclave (enclaves/<name>/cert.pem)", argument="DIR")
    return Keystore(root=root, enclaves=tuple(found))


def _identity(cert: Path, key: Path) -> pki.Identity:
    try:
        return pki.load_identity(cert, key)
    except OSError as error:
        raise UsageError(f"{error.filename or cert}: {error.strerror or error}",
                         argument="DIR") from None
    except (ValueError, TypeError) as error:
        first = (str(error).splitlines() or [type(error).__name__])[0]
        raise UsageError(f"{cert} + {key.name}: not a certificate and its EC key "
                         f"({first[:160]})", argument="DIR") from None
