"""The OpenAI adapters share one TLS context a process, and it still checks certificates."""

from __future__ import annotations

import datetime
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from attractor.errors import RetryableProviderError
from attractor.llm.retry import RetryPolicy
from tests.llm.fake_http import FakeServer, Reply
from tests.llm.test_openai_model import make_model
from tests.llm.wire import failure_of, openai_completion

pytestmark = pytest.mark.anyio


def _self_signed(folder: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[FakeServer]:
    """The scripted server behind TLS with a certificate nobody vouches for."""
    cert, key = _self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = FakeServer()
    server._httpd.socket = context.wrap_socket(server._httpd.socket, server_side=True)
    with server.running() as running:
        yield running


async def test_a_server_whose_certificate_nobody_vouches_for_is_refused(
    tls_server: FakeServer,
) -> None:
    tls_server.add(Reply(body=openai_completion("should not be read")))
    url = tls_server.url.replace("http://", "https://")
    policy = RetryPolicy(max_retries=0, base_delay=0.001)
    # Two models of one process (one TLS context): neither trusts the server.
    for model in (make_model(url, policy), make_model(url, policy)):
        error = await failure_of(model, RetryableProviderError)
        assert "connection failed" in error.reason
    assert tls_server.received == []
