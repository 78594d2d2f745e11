"""The user-given names a keystore carries, checked before anything is written: enclave
names (certificate subjects, directory names, permission grants), TLS addresses
(certificate subjectAltNames) and the keystore directory (written into the profiles).

Pure functions; each raises a one-line UsageError naming the argument and what is
accepted.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path

from linklab.errors import UsageError

ENCLAVE_NAME = re.compile(r"(/[A-Za-z0-9_]+)+")
# X.509 upper bound for a commonName (RFC 5280 Appendix A, ub-common-name = 64); the
# enclave's TLS certificate is named "<enclave> tls", 4 characters more.
ENCLAVE_MAX = 64 - len(" tls")
# RFC 1123 §2.1 host name: labels of letters, digits and hyphens, 1..63 characters, not
# beginning or ending with a hyphen; 253 characters in all (255 octets on the wire).
DNS_LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
DNS_MAX = 253
TLS_ACCEPTED = ("an IPv4/IPv6 address (no %zone) or a DNS name of RFC 1123 labels (letters, "
                "digits, inner '-', 1-63 characters each, dot-separated, 253 in all, not all "
                "digits at the end; e.g. broker.example.org)")


def check_enclave_name(name: str) -> str:
    if not ENCLAVE_NAME.fullmatch(name):
        raise UsageError(f"expected a path like /linklab/robot (letters, digits, _), got {name!r}",
                         argument="--enclave")
    if len(name) > ENCLAVE_MAX:
        raise UsageError(f"{name[:20]!r}... has {len(name)} characters; at most {ENCLAVE_MAX} "
                         "fit a certificate's common name", argument="--enclave")
    return name


def check_tls_name(name: str) -> str:
    """``name`` if it is an IP address or an RFC 1123 DNS name, else a UsageError."""
    if "%" not in name:
        try:
            ipaddress.ip_address(name)
            return name
        except ValueError:
            pass
    labels = name.split(".")
    if (len(name) > DNS_MAX or not all(DNS_LABEL.fullmatch(label) for label in labels)
            or labels[-1].isdigit()):  # RFC 1123 §2.1: never of the form #.#.#.#
        raise UsageError(f"expected {TLS_ACCEPTED}, got {name!r}", argument="--tls-address")
    return name


def check_keystore_dir(root: Path) -> None:
    """The keystore's absolute path is written into its profiles (the MQTT profile and
    mosquitto's configuration are line-based, the Fast DDS profile names ``file://`` URIs):
    no control characters, and text that UTF-8 can encode."""
    try:
        text = str(root.resolve())
    except (OSError, RuntimeError):  # a symlink loop: DIR's own check names it
        text = str(root.absolute())
    bad = next((c for c in text if ord(c) < 0x20 or ord(c) == 0x7F), None)
    if bad is not None:
        raise UsageError(f"{text!r} holds the control character {bad!r}; the keystore's path "
                         "is written into its profiles: choose a path without one",
                         argument="DIR")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{text!r} is not valid UTF-8; the keystore's path is written into "
                         "its profiles: choose a UTF-8 path", argument="DIR") from None
