"""The version of a2a-hub, in the lowest layer: the root package, ``a2a-hub --version`` and
``GET /version`` all read it from here (the root package exports every part, so no part may
import it)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
