"""Command-line options made from the settings' fields, so that each setting is written once."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from a2a_hub.cli._output import escape
from a2a_hub.settings import SettingField, setting_fields

__all__ = [
    "Command",
    "Group",
    "default_help",
    "env_only_help",
    "option_help",
    "setting_options",
]


def _no_argument_types(params: list[Any]) -> list[Any]:
    """The parameters, arguments without the ``<str>``/``<path>`` typer would show."""
    for param in params:
        if getattr(param, "param_type_name", "") == "argument":
            param.display_type_rich = lambda ctx: None
    return params


class Command(TyperCommand):
    """A command whose ``--help`` shows no Python types (flags take no value)."""

    def get_help_option(self, ctx: Any) -> Any:
        """The help option, without the ``<bool>`` typer would show."""
        option = super().get_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option

    def get_params(self, ctx: Any) -> list[Any]:
        """The parameters, arguments shown by name alone."""
        return _no_argument_types(super().get_params(ctx))


class Group(TyperGroup):
    """A group of commands whose ``--help`` shows no Python types."""

    def get_help_option(self, ctx: Any) -> Any:
        """The help option, without the ``<bool>`` typer would show."""
        option = super().get_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option

    def get_params(self, ctx: Any) -> list[Any]:
        """The parameters, arguments shown by name alone."""
        return _no_argument_types(super().get_params(ctx))


def default_help(text: str, default: str) -> str:
    """Help text (plain) and its default, written as every option writes it."""
    return f"{escape(text)}  [dim]\\[default: {escape(default)}][/dim]"


def option_help(field: SettingField) -> str:
    """The help of a setting's option (rich markup): its text, variable and default."""
    text = field.help
    if field.choices:
        text += " One of: " + ", ".join(field.choices) + "."
    parts = [escape(text), rf"[dim yellow]\[env var: {field.env}][/dim yellow]"]
    default = field.default_text
    if default is not None:
        parts.append(rf"[dim]\[default: {escape(default)}][/dim]")
    return "  ".join(parts)


def env_only_help() -> str:
    """Help for the settings that are not options (secrets): their variables, for an epilog."""
    lines = [f"{field.env}: {field.help}" for field in setting_fields() if field.flag is None]
    if not lines:
        return ""
    return escape("Only in the environment or hub.toml:  " + "  ".join(lines))


def _annotation(field: SettingField) -> Any:
    assert field.flag is not None
    panel = None if field.section is None else field.title
    names = [field.flag] + ([field.short] if field.short else [])
    if field.is_flag:
        option = typer.Option(
            f"{field.flag}/--no-{field.flag[2:]}",
            metavar="",
            help=option_help(field),
            rich_help_panel=panel,
            show_default=False,
        )
        return Annotated[bool | None, option]
    option = typer.Option(
        *names,
        help=option_help(field),
        metavar=field.metavar,
        rich_help_panel=panel,
        show_default=False,
    )
    # Text, checked by the settings (one clear line naming the option, like the
    # other sources), not by click.
    if field.item is not None:
        return Annotated[list[str] | None, option]
    return Annotated[str | None, option]


def setting_options(command: Callable[..., None]) -> Callable[..., None]:
    """Give a typer command one option per setting (``--port``, ``--store``, ``--llm-model``…).

    ``command`` takes a keyword parameter ``overrides``; it receives the options as
    ``{flat key: text, list of texts, True/False or None}``, ready for
    :func:`~a2a_hub.settings.load_settings`.
    """
    fields = [f for f in setting_fields() if f.flag is not None]
    signature = inspect.signature(command, eval_str=True)
    keyword = inspect.Parameter.KEYWORD_ONLY
    own = [p.replace(kind=keyword) for p in signature.parameters.values() if p.name != "overrides"]
    added = {
        f: inspect.Parameter(f.key, keyword, default=None, annotation=_annotation(f))
        for f in fields
    }
    # the settings of Settings itself (--agent) first, then the command's, then the sections'
    params = [
        *(p for f, p in added.items() if f.section is None),
        *own,
        *(p for f, p in added.items() if f.section is not None),
    ]

    @functools.wraps(command)
    def with_settings(**kwargs: Any) -> None:
        overrides = {f.key: kwargs.pop(f.key, None) for f in fields}
        command(**kwargs, overrides=overrides)

    with_settings.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    with_settings.__annotations__ = {p.name: p.annotation for p in params}
    return with_settings
