"""The signing keys: shared through the store, rotated with a grace period."""

from __future__ import annotations

import asyncio
import time

import jwt

from a2a_hub.push.signing import SigningKeys
from a2a_hub.stores.memory import MemoryStore


async def test_instances_share_keys_and_rotation_keeps_the_old_key_for_a_while() -> None:
    store = MemoryStore()
    a, b = SigningKeys(store), SigningKeys(store)
    await a.refresh()
    await b.refresh()
    assert a.current.kid == b.current.kid
    token = a.sign(issuer="i", audience="https://x/", jti="j", task_id="t", body=b"{}")
    old = a.current.kid
    new = await b.rotate()
    await a.refresh()
    assert a.current.kid == new.kid != old
    kids = [k["kid"] for k in a.jwks()["keys"]]
    assert kids == [old, new.kid]
    keyset = jwt.PyJWKSet.from_dict(b.jwks())
    key = next(k for k in keyset.keys if k.key_id == old)
    assert jwt.decode(token, key, algorithms=["EdDSA"], audience="https://x/")["jti"] == "j"


async def test_retired_keys_leave_after_the_grace_and_old_keys_rotate_by_age() -> None:
    store = MemoryStore()
    keys = SigningKeys(store, grace=0.0)
    await keys.refresh()
    first = keys.current.kid
    await keys.rotate()
    assert [k["kid"] for k in keys.jwks()["keys"]] == [keys.current.kid]
    aged = SigningKeys(store, max_age=0.0)
    await aged.refresh()  # older than max_age: rotated
    assert aged.current.kid not in (first,)
    assert aged.current.created <= time.time()


async def test_concurrent_rotations_each_add_one_key() -> None:
    store = MemoryStore()
    a, b = SigningKeys(store), SigningKeys(store)
    await a.refresh()
    await asyncio.gather(a.rotate(), b.rotate())
    await a.refresh()
    assert len(a.jwks()["keys"]) == 3  # the first (retired), and one per rotation


def test_a_key_signs_as_ed25519_does_and_a_restored_key_alike() -> None:
    """The signature (made by libsodium) is the Ed25519 signature of the key: the bytes
    OpenSSL gives, verified by the public key the JWKS publishes, also for a key read back
    from its stored form; its tokens verify with their body hash."""
    from a2a_hub.push.signing import SigningKey, body_sha256

    key = SigningKey.generate()
    restored = SigningKey.from_stored(key.stored())
    data = b"header.claims"
    assert key.sign(data) == key.private.sign(data) == restored.sign(data)
    key.private.public_key().verify(restored.sign(data), data)  # raises if it does not
    keys = SigningKeys()
    keys.keys = [restored]
    token = keys.sign(issuer="i", audience="https://x/", jti="j", task_id="t", body=b"{}")
    jwk = jwt.PyJWK.from_dict(keys.jwks()["keys"][0])
    claims = jwt.decode(token, jwk, algorithms=["EdDSA"], audience="https://x/")
    assert claims["request_body_sha256"] == body_sha256(b"{}") and claims["taskId"] == "t"
