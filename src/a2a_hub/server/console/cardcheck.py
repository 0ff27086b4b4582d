"""What the inspector says of an agent card: checked against the A2A 1.0 schema, and its
signatures verified.

The schema (``agent-card.schema.json`` beside this module) was written for a2a-hub from
``proto/a2a.proto``: a field marked ``REQUIRED`` there is required here; it is checked with
``jsonschema`` (draft 2020-12), each violation one finding naming where it is.

A signature (A2A 1.0 §8.4) is a JWS with a detached payload: the card without
``signatures`` in its RFC 8785 canonical form (``rfc8785``) — as served, or as a 1.0 reader
parses it (``client.card_signature.v10_form``: what a2a-hub signs), the protected header naming
``alg``, ``kid`` and ``jku`` (the URL of the signer's JWKS).  :func:`signature_findings`
fetches the JWKS (through the caller's fetcher: the hub's address policy) and verifies each
signature with ``joserfc``, asymmetric algorithms only.  A good signature proves that the
holder of the key at ``jku`` signed this very card, not that the key deserves trust: the
finding names the ``jku`` host so a person can judge.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import warnings
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any, Literal
from urllib.parse import urlsplit

import msgspec

__all__ = ["Finding", "schema_findings", "sign_card", "signature_findings"]

#: The algorithms a card signature may use (never ``none`` nor a shared-secret HMAC).
ALGORITHMS = (
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
    "Ed25519",
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
)


class Finding(msgspec.Struct, frozen=True):
    """One thing the inspector found: ``ok``, ``info``, ``warning`` or ``error``."""

    level: Literal["ok", "info", "warning", "error"]
    message: str


@functools.cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

    text = (resources.files("a2a_hub.server.console") / "agent-card.schema.json").read_text()
    schema = json.loads(text)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def schema_findings(card: dict[str, Any]) -> list[Finding]:
    """The card checked against the A2A 1.0 schema: one error per violation (``where: what``),
    or one ``ok``."""
    errors = sorted(_validator().iter_errors(card), key=lambda e: [str(p) for p in e.path])
    found = [
        Finding("error", f"{'/'.join(str(p) for p in e.path) or 'card'}: {e.message}")
        for e in errors
    ]
    if "supportedInterfaces" not in card and ("url" in card or "protocolVersion" in card):
        found.append(
            Finding(
                "info",
                f"this looks like an A2A {card.get('protocolVersion') or '0.x'} card "
                "(a url without supportedInterfaces): it is not a 1.0 card",
            )
        )
    return found or [Finding("ok", "the card matches the A2A 1.0 schema")]


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


async def signature_findings(
    card: dict[str, Any], fetch_json: Callable[[str], Awaitable[Any]]
) -> list[Finding]:
    """Each signature of ``card`` verified with the key its ``jku`` publishes (``fetch_json``
    reads a JSON document from a URL, raising an exception whose message says why not)."""
    import rfc8785
    from joserfc import jws
    from joserfc.errors import JoseError, SecurityWarning
    from joserfc.jwk import KeySet

    from a2a_hub.client.card_signature import v10_form

    signatures = card.get("signatures")
    if not signatures:
        return [Finding("info", "the card is not signed (no signatures)")]
    if not isinstance(signatures, list):
        return [Finding("error", "signatures must be a list")]
    unsigned = {k: v for k, v in card.items() if k != "signatures"}
    # the card as served, or as a 1.0 reader parses it (what a2a-hub signs, and what the
    # a2a-sdk's verifier checks: 0.3 fields and empty values left out)
    payloads = [rfc8785.dumps(unsigned), rfc8785.dumps(v10_form(card))]
    found: list[Finding] = []
    for n, sig in enumerate(signatures, 1):
        name = f"signature {n}"
        if not isinstance(sig, dict) or not isinstance(sig.get("protected"), str):
            found.append(Finding("error", f"{name}: no protected header"))
            continue
        try:
            header = json.loads(_b64decode(sig["protected"]))
            if not isinstance(header, dict):
                raise ValueError("not an object")
        except (ValueError, binascii.Error) as exc:
            found.append(Finding("error", f"{name}: the protected header is not JSON ({exc})"))
            continue
        extra = sig.get("header")
        unprotected: dict[str, Any] = extra if isinstance(extra, dict) else {}
        alg, kid = header.get("alg"), header.get("kid") or unprotected.get("kid")
        jku = header.get("jku") or unprotected.get("jku")
        if alg not in ALGORITHMS:
            found.append(Finding("error", f"{name}: algorithm {alg!r} is not accepted"))
            continue
        if not isinstance(jku, str) or not jku:
            found.append(Finding("warning", f"{name} ({alg}) names no jku: its key is unknown"))
            continue
        try:
            keys = KeySet.import_key_set(await fetch_json(jku))
        except Exception as exc:
            found.append(Finding("error", f"{name}: cannot read the keys at {jku}: {exc}"))
            continue
        compact = f"{sig['protected']}..{sig.get('signature', '')}"
        try:
            with warnings.catch_warnings():  # EdDSA: deprecated by RFC 9864, still verified
                warnings.simplefilter("ignore", SecurityWarning)
                for n_payload, payload in enumerate(payloads, 1):
                    try:
                        jws.deserialize_compact(compact, keys, algorithms=[alg], payload=payload)
                        break
                    except (JoseError, ValueError):
                        if n_payload == len(payloads):
                            raise
        except (JoseError, ValueError) as exc:
            reason = str(exc).rstrip(": ") or type(exc).__name__
            found.append(
                Finding(
                    "error",
                    f"{name} ({alg}, kid {kid}) does not verify: the card was changed after "
                    f"it was signed, or another key signed it ({reason})",
                )
            )
            continue
        host = urlsplit(jku).hostname
        found.append(
            Finding("ok", f"{name} ({alg}, kid {kid}) verifies with the key published at {host}")
        )
    return found


def sign_card(card: dict[str, Any], key: Any, *, kid: str, jku: str, alg: str = "Ed25519") -> str:
    """A detached JWS over ``card`` (without ``signatures``) in its RFC 8785 form, as
    ``{"protected", "signature"}`` expects it: ``protected..signature`` (for tests and
    tools; the hub's own cards are signed elsewhere)."""
    import rfc8785
    from joserfc import jws

    unsigned = {k: v for k, v in card.items() if k != "signatures"}
    header = {"alg": alg, "kid": kid, "jku": jku, "typ": "JOSE"}
    token = jws.serialize_compact(header, rfc8785.dumps(unsigned), key, algorithms=[alg])
    protected, _, signature = token.split(".")
    return f"{protected}..{signature}"
