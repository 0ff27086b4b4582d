"""The options an executor class takes: the named parameters of its constructors.

``links`` is not an option: the hub passes it (see :mod:`a2a_hub.agents.links`).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable

__all__ = ["INJECTED", "NAMED", "named_options", "unknown_options"]

#: Constructor parameters the hub fills in itself, never written as options.
INJECTED = frozenset({"links"})

#: The kinds of parameter that can be given as options (by name).
NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def named_options(cls: type, last: type) -> list[str]:
    """The named ``__init__`` parameters of ``cls`` and its bases, down to ``last``."""
    names: list[str] = []
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is not None:
            for name, param in inspect.signature(init).parameters.items():
                named = param.kind in NAMED and name not in ("self", *INJECTED)
                if named and name not in names:
                    names.append(name)
        if klass is last:
            break
    return names


def unknown_options(cls: type, last: type, unknown: Iterable[str]) -> ValueError:
    """The error refusing ``unknown`` options of ``cls``, listing the valid ones."""
    names = sorted(unknown)
    plural = "s" if len(names) > 1 else ""
    return ValueError(
        f"unknown option{plural} {', '.join(map(repr, names))} for {cls.__name__}; "
        f"valid options: {', '.join(named_options(cls, last)) or 'none'}"
    )
