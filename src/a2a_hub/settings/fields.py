"""How a setting is declared and what is derived from it: :func:`setting`, :class:`Section`,
and :class:`SettingField` (its key, variable, option, help and parser).

The flat list of every field (:func:`~a2a_hub.settings.model.setting_fields`) is derived once
from the annotations of :class:`~a2a_hub.settings.model.Settings` and its sections by
:func:`fields_of`, so the file, the environment and the command line cannot disagree.  This
module knows no particular setting: the model imports it, not the other way round.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, get_args, get_origin

import msgspec

__all__ = [
    "ENV_PREFIX",
    "Section",
    "SettingField",
    "SettingsError",
    "fields_of",
    "setting",
]

#: Every variable is ``ENV_PREFIX`` + the upper-case flat key.
ENV_PREFIX = "A2A_HUB_"


class SettingsError(ValueError):
    """A configuration value is missing or wrong; the message says which and why."""


def setting(
    help: str,
    *,
    key: str | None = None,
    flag: str | None = None,
    short: str | None = None,
    cli: bool = True,
    metavar: str | None = None,
    fallback_env: tuple[str, ...] = (),
    shown_default: str | None = None,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
) -> msgspec.Meta:
    """Describe one setting; use it as ``name: Annotated[type, setting("help")] = default``.

    ``help`` is the text of ``--help``.  ``key`` replaces the flat key (by default the
    section's ``key_prefix`` + the field name), from which the variable
    (``A2A_HUB_{KEY}``) and the option (``--{key-with-dashes}``) are derived; ``flag``
    replaces the option alone.  ``cli=False`` keeps a setting off the command line
    (secrets).  ``fallback_env`` names variables read when no source sets the value.
    ``ge``/``gt``/``le``/``lt`` bound numbers, checked wherever the value comes from.
    ``shown_default`` is the default as help texts write it, for a default of None
    that means something ("the provider's own").
    """
    extra: dict[str, Any] = {"cli": cli}
    for name, value in (
        ("key", key),
        ("flag", flag),
        ("short", short),
        ("metavar", metavar),
        ("fallback_env", fallback_env),
        ("shown_default", shown_default),
    ):
        if value:
            extra[name] = value
    bounds = {
        name: value
        for name, value in (("ge", ge), ("gt", gt), ("le", le), ("lt", lt))
        if value is not None
    }
    # (Meta's overloads spell out each pair of bounds; msgspec checks them at run time)
    make: Any = msgspec.Meta
    meta: msgspec.Meta = make(description=help, extra=extra, **bounds)
    return meta


class Section(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A group of settings: a field of :class:`~a2a_hub.settings.model.Settings` and a
    ``[table]`` of hub.toml."""

    #: Prefix of the flat keys of its fields: ``"llm_"`` gives ``llm_model``,
    #: ``A2A_HUB_LLM_MODEL`` and ``--llm-model``.
    key_prefix: ClassVar[str] = ""
    #: Heading of the section's options in ``a2a-hub serve --help``.
    title: ClassVar[str] = "Options"


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True, eq=False)
class SettingField:
    """One setting: where it lives in :class:`~a2a_hub.settings.model.Settings` and how each
    source names it."""

    #: Section attribute (``"server"``), or None for a field of Settings itself.
    section: str | None
    #: Attribute within the section (``"port"``).
    name: str
    #: Flat key: hub.toml top-level key, ``A2A_HUB_{KEY}`` and ``--{key}`` (``"port"``).
    key: str
    #: The annotated type (with bounds), for checking values.
    type: Any
    help: str
    #: The default (a fresh one for fields with a default factory).
    default: Any
    #: ``A2A_HUB_PORT``.
    env: str
    #: Variables read when no source sets the value (``OPENAI_API_KEY``).
    fallback_env: tuple[str, ...]
    #: ``--port``, or None when the setting is not a command-line option.
    flag: str | None
    short: str | None
    metavar: str
    #: Heading of the option in ``serve --help``.
    title: str
    meta: msgspec.Meta

    @property
    def path(self) -> str:
        """``server.port``, or ``agents`` for a field of Settings itself."""
        return self.name if self.section is None else f"{self.section}.{self.name}"

    @property
    def base(self) -> Any:
        """The type without bounds and without ``| None``."""
        return _strip(self.type)[0]

    @property
    def optional(self) -> bool:
        """Whether None is a valid value."""
        return _strip(self.type)[1]

    @property
    def item(self) -> Any | None:
        """The item type of a list setting (repeatable option, comma-separated variable)."""
        return get_args(self.base)[0] if get_origin(self.base) is list else None

    @property
    def is_flag(self) -> bool:
        """Whether the setting is a yes/no switch (``--x/--no-x``)."""
        return self.base is bool

    @property
    def choices(self) -> tuple[str, ...] | None:
        """The allowed values of a ``Literal`` setting."""
        if get_origin(self.base) is Literal:
            return tuple(str(c) for c in get_args(self.base))
        return None

    @property
    def default_text(self) -> str | None:
        """The default as help texts write it (``8000``, ``yes``, ``the provider's own``),
        or None when there is nothing worth saying (no value)."""
        extra = self.meta.extra or {}
        if extra.get("shown_default"):
            return str(extra["shown_default"])
        value = self.default
        if value is None or value == [] or value == {}:
            return None
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return str(value)

    def rule(self) -> str:
        """What the setting accepts, as in "--port must be <rule>"."""
        choices = self.choices
        if choices:
            return "one of " + ", ".join(choices)
        base = self.item or self.base
        if base is bool:
            return "true or false"
        noun = {int: "a whole number", float: "a number", str: "text"}.get(base, _name(base))
        meta = _bounds(self.type) or self.meta
        if meta.ge is not None and meta.le is not None:
            return f"{noun} from {_num(meta.ge)} to {_num(meta.le)}"
        bounds = [
            f"{word} {_num(value)}"
            for word, value in (
                ("of at least", meta.ge),
                ("greater than", meta.gt),
                ("of at most", meta.le),
                ("less than", meta.lt),
            )
            if value is not None
        ]
        return " ".join([noun, " and ".join(bounds)]) if bounds else noun

    def parse(self, value: Any, who: str) -> Any:
        """``value`` (text from a variable or option, or a value from hub.toml or code)
        checked and converted to the field's type; :class:`SettingsError` names ``who``.
        """
        item = self.item
        if item is None:
            return self._one(self.type, value, who)
        raw = split_list(value) if isinstance(value, str) else value
        if not isinstance(raw, list | tuple):
            raise SettingsError(f"{who} must be a list; got {value!r}")
        parse_text = getattr(item, "parse", None)
        out = []
        for entry in raw:
            if isinstance(entry, str) and not entry.strip():
                continue
            if isinstance(entry, str) and callable(parse_text):
                out.append(parse_text(entry.strip()))
            else:
                out.append(self._one(item, entry, who))
        return out

    def _one(self, tp: Any, value: Any, who: str) -> Any:
        base, optional = _strip(tp)
        if value is None and optional:
            return None
        try:
            if not isinstance(value, str):
                return msgspec.convert(value, tp)
            text = value.strip()
            if base is bool:
                if text.lower() in _TRUE | _FALSE:
                    return text.lower() in _TRUE
                raise msgspec.ValidationError(text)
            if get_origin(base) is Literal:
                text = text.lower()
            return msgspec.convert(text, tp, strict=False)
        except msgspec.ValidationError as exc:
            if isinstance(base, type) and issubclass(base, msgspec.Struct):
                raise SettingsError(f"{who}: {exc}") from None
            raise SettingsError(f"{who} must be {self.rule()}; got {value!r}") from None


def _strip(tp: Any) -> tuple[Any, bool]:
    """(the type without Annotated and None, whether None is allowed)."""
    if get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) != 1:
            return tp, True
        inner = args[0]
        return (get_args(inner)[0] if get_origin(inner) is Annotated else inner), True
    return tp, False


def _bounds(tp: Any) -> msgspec.Meta | None:
    """The bounds of an optional number, which msgspec wants on the number itself
    (``Annotated[Annotated[int, Meta(ge=0)] | None, setting(...)]``)."""
    if get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) in (typing.Union, types.UnionType):
        for arg in get_args(tp):
            meta = _meta(arg)
            if meta is not None:
                return meta
    return None


def _name(tp: Any) -> str:
    return str(getattr(tp, "__name__", tp))


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _meta(tp: Any) -> msgspec.Meta | None:
    if get_origin(tp) is Annotated:
        for extra in get_args(tp)[1:]:
            if isinstance(extra, msgspec.Meta):
                return extra
    return None


def _default_metavar(base: Any) -> str:
    if get_origin(base) is Literal:
        return "CHOICE"
    if get_origin(base) is list:
        base = get_args(base)[0]
    return {int: "INTEGER", float: "NUMBER"}.get(base, "TEXT")


def fields_of(
    struct: type[msgspec.Struct], section: str | None, prefix: str, title: str
) -> list[SettingField]:
    """The settings of ``struct`` (a section, or Settings itself without its sections)."""
    fields = []
    for info in msgspec.structs.fields(struct):
        meta = _meta(info.type)
        if meta is None:
            if isinstance(info.type, type) and issubclass(info.type, Section):
                continue
            raise TypeError(f"setting {struct.__name__}.{info.name} has no setting(...) help")
        extra = meta.extra or {}
        key = extra.get("key") or prefix + info.name
        default = info.default_factory() if info.default is msgspec.NODEFAULT else info.default
        flag = None
        if extra.get("cli", True):
            flag = extra.get("flag") or "--" + key.replace("_", "-")
        fields.append(
            SettingField(
                section=section,
                name=info.name,
                key=key,
                type=info.type,
                help=meta.description or "",
                default=default,
                env=ENV_PREFIX + key.upper(),
                fallback_env=tuple(extra.get("fallback_env", ())),
                flag=flag,
                short=extra.get("short"),
                metavar=extra.get("metavar") or _default_metavar(_strip(info.type)[0]),
                title=title,
                meta=meta,
            )
        )
    return fields


def split_list(text: str) -> list[str]:
    """A list setting's text (an ``A2A_HUB_*`` variable) split at its commas, except those
    inside a JSON object or string (``A2A_HUB_AGENTS='a=echo?{"note": "x,y"},b=echo'``)."""
    items, depth, quoted, escaped, start = [], 0, False, False, 0
    for i, ch in enumerate(text):
        if quoted:
            escaped, quoted = (not escaped and ch == "\\"), quoted and (escaped or ch != '"')
        elif ch == '"' and depth:
            quoted = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]" and depth:
            depth -= 1
        elif ch == "," and not depth:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return items
