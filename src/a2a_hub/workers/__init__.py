"""A worker tier on Temporal: API nodes queue turns, ``a2a-hub worker`` processes run them.

Only :mod:`.target` is imported here (it needs no Temporal); the rest needs the
``temporal`` extra (``temporalio``) and is imported where used.
"""

from a2a_hub.workers.target import INPROCESS, ExecutorTarget, connect, parse_executor

__all__ = ["INPROCESS", "ExecutorTarget", "connect", "parse_executor"]
