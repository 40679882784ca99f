"""Certificates for a loopback control plane: one CA, the API server's serving certificate, client certificates
for the admin and each component, and the service-account signing key.

ECDSA P-256 throughout: generating a set takes milliseconds, and kube-apiserver accepts ES256 service-account keys.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["Pki", "make_pki"]

_VALID = datetime.timedelta(days=7)
# The names clients use for the API server, in-cluster and on loopback (the first service IP of 10.0.0.0/24).
_SERVING_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")
_SERVING_IPS = ("127.0.0.1", "10.0.0.1")


@dataclass(frozen=True)
class Pki:
    dir: Path

    @property
    def ca(self) -> Path:
        return self.dir / "ca.crt"

    @property
    def serving(self) -> tuple[Path, Path]:
        return self.dir / "apiserver.crt", self.dir / "apiserver.key"

    def client(self, name: str) -> tuple[Path, Path]:
        return self.dir / f"{name}.crt", self.dir / f"{name}.key"

    @property
    def service_account(self) -> tuple[Path, Path]:
        """(public key, private key) for signing service-account tokens."""
        return self.dir / "sa.pub", self.dir / "sa.key"


# Client identities: file name -> (CN, O). The component names are the users RBAC's bootstrap policy binds.
CLIENTS = {
    "admin": ("kubernetes-admin", "system:masters"),
    "kube-controller-manager": ("system:kube-controller-manager", None),
    "kube-scheduler": ("system:kube-scheduler", None),
}


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    path.chmod(0o600)


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _builder(subject: x509.Name, issuer: x509.Name, public: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALID)
    )


def make_pki(directory: Path) -> Pki:
    """Generate every certificate and key into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(directory)
    ca_key = _key()
    ca_name = _name("phalanx-testenv-ca")
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
        )  # digitalSignature, keyCertSign, cRLSign
        .sign(ca_key, hashes.SHA256())
    )
    pki.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))

    def issue(
        path: tuple[Path, Path], subject: x509.Name, usage: x509.ObjectIdentifier, sans: list[x509.GeneralName]
    ) -> None:
        key = _key()
        builder = _builder(subject, ca_name, key.public_key()).add_extension(
            x509.ExtendedKeyUsage([usage]), critical=False
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        path[0].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(path[1], key)

    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in _SERVING_NAMES]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in _SERVING_IPS]
    issue(pki.serving, _name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH, sans)
    for file, (cn, org) in CLIENTS.items():
        issue(pki.client(file), _name(cn, org), ExtendedKeyUsageOID.CLIENT_AUTH, [])
    sa_key = _key()
    pub, priv = pki.service_account
    _write_key(priv, sa_key)
    pub.write_bytes(
        sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return pki
