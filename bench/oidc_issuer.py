"""A minimal OpenID Connect issuer for `make bench` (the ``send-auth`` scenario).

It serves the discovery document and the JWKS of one RSA key from a thread of the bench's
own process, and signs one long-lived token with PyJWT; the a2a-hub server of
``a2a-hub/oidc`` is pointed at it (``A2A_HUB_AUTH_OIDC_ISSUER``) and verifies the token of
every request.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

AUDIENCE = "a2a-hub-bench"


class BenchIssuer:
    """Discovery + JWKS on ``url`` once :meth:`start` ran; :meth:`token` works before."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._server: ThreadingHTTPServer | None = None

    def token(self, subject: str, ttl: float = 6 * 3600) -> str:
        now = int(time.time())
        claims = {"iss": self.url, "aud": AUDIENCE, "sub": subject, "iat": now, "exp": now + ttl}
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "bench"})

    def _documents(self) -> dict[str, Any]:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {
            "/.well-known/openid-configuration": {
                "issuer": self.url,
                "jwks_uri": f"{self.url}/jwks",
            },
            "/jwks": {"keys": [{**jwk, "kid": "bench", "use": "sig", "alg": "RS256"}]},
        }

    def start(self) -> None:
        documents = {path: json.dumps(body).encode() for path, body in self._documents().items()}

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                body = documents.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
