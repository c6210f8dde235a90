"""Support for the tests of reading the support directory (issue 44): a guard that turns reading a
device or a FIFO whole into a failed test instead of a hang or a process that eats the machine's
memory, and a self-signed certificate that this process trusts, for an https directory served locally."""

from __future__ import annotations

import datetime
import ipaddress
import os
import pathlib
import ssl
import stat
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from keystore.directory_file import MAX_DIRECTORY_BYTES


class EndlessRead(AssertionError):
    """A reader tried to read a non-regular file whole, or read far past the directory's cap."""


def guard_endless_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Until the test ends, ``Path.read_bytes``/``read_text`` of anything but a regular file, and
    ``os.read`` past three times the cap in all, raise :class:`EndlessRead`. A safety net only: the
    tests assert on what the reader says, and this keeps a regression from reading ``/dev/zero`` into
    memory or waiting on a FIFO forever. Returns the running count of bytes ``os.read`` returned."""
    read_bytes, read_text, os_read = pathlib.Path.read_bytes, pathlib.Path.read_text, os.read
    counted = [0]

    def regular_only(path: pathlib.Path) -> None:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise EndlessRead(f"{path} is read whole, though it is no regular file")

    def guarded_read_bytes(self: pathlib.Path) -> bytes:
        regular_only(self)
        return read_bytes(self)

    def guarded_read_text(self: pathlib.Path, *args: Any, **kwargs: Any) -> str:
        regular_only(self)
        return read_text(self, *args, **kwargs)

    def guarded_os_read(descriptor: int, length: int) -> bytes:
        data = os_read(descriptor, length)
        counted[0] += len(data)
        if counted[0] > 3 * MAX_DIRECTORY_BYTES:
            raise EndlessRead(f"{counted[0]} bytes read, far past the {MAX_DIRECTORY_BYTES}-byte cap")
        return data

    monkeypatch.setattr(pathlib.Path, "read_bytes", guarded_read_bytes)
    monkeypatch.setattr(pathlib.Path, "read_text", guarded_read_text)
    monkeypatch.setattr(os, "read", guarded_os_read)
    return counted


def trusted_localhost_tls(folder: Path, monkeypatch: pytest.MonkeyPatch) -> ssl.SSLContext:
    """A server context with a fresh self-signed certificate for 127.0.0.1 and localhost, which this
    process's default https contexts trust for the rest of the test (``SSL_CERT_FILE``, read each time
    a default context is made, so the code under test needs no test-only setting)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    certificate_file, key_file = folder / "localhost.pem", folder / "localhost-key.pem"
    certificate_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate_file))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate_file, key_file)
    return context
