"""Message claims (idempotent sends) and the shared named values in Redis."""

from __future__ import annotations

from typing import cast

import msgspec

from a2a_hub.stores.base import MessageClaim, now
from a2a_hub.stores.redis import scripts
from a2a_hub.stores.redis.base import RedisBase, redis_guarded

__all__ = ["RedisClaims"]

_enc = msgspec.json.Encoder()
_claim_dec = msgspec.json.Decoder(MessageClaim)


class RedisClaims(RedisBase):
    """Message claims (:class:`~a2a_hub.stores.base.MessageClaims`) and the named values
    (:class:`~a2a_hub.stores.base.MetaStore`)."""

    @redis_guarded
    async def claim_message(
        self, agent_id: str, owner: str | None, message_id: str, claim: MessageClaim
    ) -> MessageClaim | None:
        if not claim.created:
            claim = msgspec.structs.replace(claim, created=now())
        found = await self._batch.call(
            scripts.CLAIM_MESSAGE,
            (self.keys(agent_id).claim(owner, message_id),),
            (
                _enc.encode(claim),
                self._history_ttl,
                "1" if claim.reply is not None else "0",
                claim.task_id,
            ),
        )
        return None if found is None else _claim_dec.decode(found)

    async def purge_claims(self, agent_id: str, before: float, limit: int = 100) -> int:
        """Claims expire by themselves (``history_ttl`` after they were made): none here."""
        return 0

    @redis_guarded
    async def get_meta(self, name: str) -> bytes | None:
        value = await self.client.get(f"{self.prefix}:meta:{name}")
        return None if value is None else cast(bytes, value)

    @redis_guarded
    async def swap_meta(self, name: str, expected: bytes | None, value: bytes) -> bool:
        done = await scripts.META_SWAP(
            self.client,
            (f"{self.prefix}:meta:{name}",),
            (expected or b"", value, "0" if expected is None else "1"),
        )
        return bool(done)
