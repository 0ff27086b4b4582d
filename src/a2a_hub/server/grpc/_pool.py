"""The private protobuf descriptor pool that holds a2a-hub's copy of ``lf.a2a.v1``.

protobuf keeps one process-wide default pool, and a file or message name may be defined
there only once.  The official ``a2a-sdk`` (or any other library generated from the same
``a2a.proto``) registers ``a2a.proto`` / ``lf.a2a.v1.*`` in that default pool, with build
options of its own, so registering ours there too would fail with "duplicate file name"
in any process that imports both.  Our generated module therefore adds its file to this
pool instead (``make proto`` rewrites that one line).  The files it imports (the
``google.api`` annotations and the well-known types) are copied here from the default pool;
their classes keep their usual behaviour (``Struct`` is a mapping, ``Timestamp`` parses
RFC 3339).  On the wire nothing changes: protobuf messages carry field numbers, not names.
"""

from __future__ import annotations

import google.api.annotations_pb2 as annotations_pb2
import google.api.client_pb2 as client_pb2
import google.api.field_behavior_pb2 as field_behavior_pb2
from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    empty_pb2,
    struct_pb2,
    timestamp_pb2,
)

__all__ = ["POOL"]

#: The pool our ``a2a_pb2`` module registers its file in.
POOL = descriptor_pool.DescriptorPool()

_DEPENDENCIES = (
    annotations_pb2,
    client_pb2,
    field_behavior_pb2,
    empty_pb2,
    struct_pb2,
    timestamp_pb2,
)


def _copy(name: str, done: set[str]) -> None:
    """Add the file ``name`` of the default pool, after the files it imports, to :data:`POOL`."""
    if name in done:
        return
    done.add(name)
    source = descriptor_pool.Default().FindFileByName(name)
    for dependency in source.dependencies:
        _copy(dependency.name, done)
    proto = descriptor_pb2.FileDescriptorProto()
    source.CopyToProto(proto)
    POOL.Add(proto)


_done: set[str] = set()
for _module in _DEPENDENCIES:
    _copy(_module.DESCRIPTOR.name, _done)
del _done, _module
