"""A real local OpenID Connect issuer for tests: discovery, JWKS and a token endpoint.

:class:`Issuer` is a small HTTP server on a loopback port, in a thread of its own:
``/.well-known/openid-configuration`` (its ``issuer`` and ``jwks_uri``), ``/jwks`` (the
public halves of its RSA keys) and ``/token`` (the client-credentials grant for one
client).  Tokens are signed with PyJWT, and :meth:`Issuer.forged` makes the malformed ones
a verifier must refuse (``alg=none``, HS256 keyed by the public key).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

CLIENT_ID = "hub-client"
CLIENT_SECRET = "s3cret"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Issuer:
    """A running issuer (``with Issuer() as issuer:``); see the module's docstring."""

    def __init__(self, audience: str = "a2a-hub-tests") -> None:
        self.audience = audience
        self.keys: dict[str, rsa.RSAPrivateKey] = {}
        self.published: set[str] = set()
        self.add_key("k1")
        self.token_requests = 0
        self.token_ttl = 3600
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/.well-known/openid-configuration":
                    self._json(
                        200,
                        {
                            "issuer": issuer.url,
                            "jwks_uri": f"{issuer.url}/jwks",
                            "token_endpoint": f"{issuer.url}/token",
                        },
                    )
                elif self.path == "/jwks":
                    self._json(200, issuer.jwks())
                else:
                    self._json(404, {"error": "not_found"})

            def do_POST(self) -> None:
                if self.path != "/token":
                    self._json(404, {"error": "not_found"})
                    return
                length = int(self.headers.get("Content-Length", "0"))
                form = parse_qs(self.rfile.read(length).decode())
                basic = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
                if self.headers.get("Authorization") != f"Basic {basic}" or form.get(
                    "grant_type"
                ) != ["client_credentials"]:
                    self._json(401, {"error": "invalid_client"})
                    return
                issuer.token_requests += 1
                token = issuer.token(CLIENT_ID, exp_in=issuer.token_ttl)
                self._json(
                    200,
                    {"access_token": token, "token_type": "Bearer", "expires_in": issuer.token_ttl},
                )

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Issuer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(10)

    def add_key(self, kid: str, *, publish: bool = True) -> None:
        """A new RSA signing key (in the JWKS unless ``publish`` is false)."""
        self.keys[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if publish:
            self.published.add(kid)

    def jwks(self) -> dict[str, Any]:
        keys = []
        for kid in sorted(self.published):
            jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.keys[kid].public_key()))
            keys.append({**jwk, "kid": kid, "use": "sig", "alg": "RS256"})
        return {"keys": keys}

    def claims(self, sub: str, **over: Any) -> dict[str, Any]:
        now = int(time.time())
        claims = {
            "iss": self.url,
            "aud": self.audience,
            "sub": sub,
            "iat": now,
            "nbf": now,
            "exp": now + 600,
        }
        claims.update(over)
        return {k: v for k, v in claims.items() if v is not None}

    def token(self, sub: str, *, kid: str = "k1", exp_in: int = 600, **over: Any) -> str:
        """A good token for ``sub`` (claims overridden by ``over``; None drops one)."""
        claims = self.claims(sub, exp=int(time.time()) + exp_in, **over)
        return jwt.encode(claims, self.keys[kid], algorithm="RS256", headers={"kid": kid})

    def public_pem(self, kid: str = "k1") -> bytes:
        return (
            self.keys[kid]
            .public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )

    def forged(self, sub: str, alg: str, kid: str = "k1") -> str:
        """``alg="none"``: unsigned; ``alg="HS256"``: an HMAC keyed by the public key's PEM
        (the algorithm-confusion attack)."""
        header = _b64(json.dumps({"alg": alg, "typ": "JWT", "kid": kid}).encode())
        payload = _b64(json.dumps(self.claims(sub)).encode())
        signing_input = f"{header}.{payload}".encode()
        if alg == "none":
            return f"{header}.{payload}."
        mac = hmac.new(self.public_pem(kid), signing_input, hashlib.sha256).digest()
        return f"{header}.{payload}.{_b64(mac)}"
