"""One enclave of a keystore: its name and where its files lie (security/keystore.py
writes them, security/profiles.py refers to them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Enclave:
    """An enclave's name and the directory of its files; each property is one file the
    middlewares' secure variants are given."""

    name: str
    directory: Path  # absolute: where security/keystore.py wrote the files

    @property
    def fastdds_profile(self) -> Path:
        return self.directory / "fastdds_security.xml"

    @property
    def cyclonedds_profile(self) -> Path:
        return self.directory / "cyclonedds_security.xml"

    @property
    def mqtt_profile(self) -> Path:
        return self.directory / "mqtt_tls.conf"

    @property
    def zenoh_profile(self) -> Path:
        return self.directory / "zenoh_tls.json5"

    @property
    def tls_cert(self) -> Path:
        return self.directory / "tls" / "cert.pem"

    @property
    def tls_key(self) -> Path:
        return self.directory / "tls" / "key.pem"

    @property
    def tls_ca(self) -> Path:
        return self.directory / "tls" / "ca.cert.pem"
