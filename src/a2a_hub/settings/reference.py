"""The settings reference of the README, made from the fields (``python -m a2a_hub.settings``)."""

from __future__ import annotations

from a2a_hub.settings.fields import SettingField
from a2a_hub.settings.load import CONFIG_ENV
from a2a_hub.settings.model import setting_fields

__all__ = ["markdown_table"]


def _code(text: str) -> str:
    return f"`{text}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _file_keys(field: SettingField) -> str:
    """How hub.toml writes it: the flat key, or the table form."""
    if field.section is None:
        return _code(f"[[{field.name}]]") if field.item is not None else _code(field.key)
    return f"{_code(field.key)} / {_code(f'[{field.section}] {field.name}')}"


def _what(field: SettingField) -> str:
    text = field.help
    if field.choices:
        text += " One of: " + ", ".join(field.choices) + "."
    if field.item is not None:
        text += f" {field.env} takes a comma-separated list."
    return _cell(text)


def markdown_table() -> str:
    """Every setting as a Markdown table: variable, option, hub.toml key, default, meaning."""
    rows = [
        "| variable | `a2a-hub serve` option | hub.toml | default | what it does |",
        "|---|---|---|---|---|",
        f"| {_code(CONFIG_ENV)} | `--config FILE`, `-c` | | | The hub.toml to read. |",
    ]
    for field in setting_fields():
        option = "(environment or hub.toml only)"
        if field.flag is not None:
            shown = field.flag if field.is_flag else f"{field.flag} {field.metavar}"
            option = _code(shown)
            if field.short:
                option += f", {_code(field.short)}"
        default = field.default_text
        if default is None:
            default = ""
        elif not (field.meta.extra or {}).get("shown_default"):
            default = _code(default)  # a value (not words about one)
        rows.append(
            f"| {_code(field.env)} | {option} | {_file_keys(field)} | {_cell(default)} | "
            f"{_what(field)} |"
        )
    return "\n".join(rows) + "\n"
