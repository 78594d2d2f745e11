"""Certificates, keys and S/MIME signatures for a keystore (the ``cryptography`` package).

Like SROS 2: ECDSA P-256 keys, a self-signed CA that is both identity CA and
permissions CA, identity certificates whose subject is ``CN=<enclave>``, and
governance/permissions documents signed by the CA as S/MIME (text, detached), which is
what ``openssl smime -sign -text`` produces and what DDS-Security plugins verify.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs7
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = timedelta(days=3650)


@dataclass(frozen=True)
class Identity:
    certificate: x509.Certificate
    private_key: ec.EllipticCurvePrivateKey

    @property
    def subject(self) -> str:
        return self.certificate.subject.rfc4514_string()


def now_utc() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def make_ca(common_name: str, start: datetime) -> Identity:
    key = new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start - timedelta(minutes=5))
        .not_valid_after(start + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=1), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                     key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, key_cert_sign=True, crl_sign=True,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                       critical=False)
        .sign(key, hashes.SHA256())
    )
    return Identity(certificate, key)


def issue(ca: Identity, common_name: str, start: datetime, *,
          tls_names: tuple[str, ...] = ()) -> Identity:
    """A leaf certificate signed by ``ca``. With ``tls_names`` (IP addresses or DNS names)
    it carries them as subjectAltName plus server+client auth, for MQTT/Zenoh over TLS."""
    key = new_key()
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start - timedelta(minutes=5))
        .not_valid_after(start + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
            ca.certificate.public_key()), critical=False)
    )
    if tls_names:
        alt: list[x509.GeneralName] = []
        for name in tls_names:
            try:
                alt.append(x509.IPAddress(ipaddress.ip_address(name)))
            except ValueError:
                alt.append(x509.DNSName(name))
        builder = builder.add_extension(x509.SubjectAlternativeName(alt), critical=False)
        builder = builder.add_extension(x509.ExtendedKeyUsage(
            [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    return Identity(builder.sign(ca.private_key, hashes.SHA256()), key)


def sign_smime(document: bytes, signer: Identity) -> bytes:
    """S/MIME (multipart/signed, detached, text) signature of ``document`` by ``signer``."""
    return (pkcs7.PKCS7SignatureBuilder()
            .set_data(document)
            .add_signer(signer.certificate, signer.private_key, hashes.SHA256())
            .sign(serialization.Encoding.SMIME,
                  [pkcs7.PKCS7Options.Text, pkcs7.PKCS7Options.DetachedSignature]))


def certificate_pem(identity: Identity) -> bytes:
    return identity.certificate.public_bytes(serialization.Encoding.PEM)


def private_key_pem(identity: Identity) -> bytes:
    return identity.private_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption())


def write_private(path: Path, data: bytes) -> None:
    """Write a private key readable by its owner only (mode 0600 from creation on)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as out:
        out.write(data)
    os.chmod(path, 0o600)


def write_public(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.chmod(path, 0o644)


def load_identity(cert_path: Path, key_path: Path) -> Identity:
    certificate = x509.load_pem_x509_certificate(cert_path.read_bytes())
    key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{key_path}: expected an EC private key")
    if key.public_key().public_numbers() != certificate.public_key().public_numbers():
        raise ValueError(f"{key_path}: the key does not belong to {cert_path}")
    return Identity(certificate, key)
