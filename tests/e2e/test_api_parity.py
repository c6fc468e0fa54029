"""docs/python.md's parity table against the CLI's commands and options (the typer app) and orderlab.api's
signatures: an option without an API counterpart, or a row naming an option or parameter that is gone, fails."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import typer

import orderlab.api as ol
from orderlab.cli import app

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\| `orderlab (\w+)` \| (`[^`]+`|—) \| (.+) \|$")
PYTHON = re.compile(r"^`(\w+)\((\w*)")


def cli_parameters() -> set[tuple[str, str]]:
    """(command, first option name or argument metavar) for every parameter of every command; (command, '—') for a
    command without any."""
    group = typer.main.get_command(app)
    found = set()
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        shown = [p.opts[0] if p.param_type_name == "option" else p.display_name_raw.upper() for p in command.params]
        found |= {(name, each) for each in shown} or {(name, "—")}
    return found


def table_rows() -> dict[tuple[str, str], str]:
    text = (ROOT / "docs" / "python.md").read_text()
    rows = [ROW.match(line) for line in text.splitlines()]
    return {(m[1], m[2].strip("`")): m[3] for m in rows if m}


def test_every_cli_option_has_a_row_and_every_row_an_option():
    rows, cli = set(table_rows()), cli_parameters()
    assert cli - rows == set(), "CLI options without a row in docs/python.md's parity table"
    assert rows - cli == set(), "rows of docs/python.md's parity table naming options the CLI no longer has"


def test_every_row_names_an_api_function_and_parameter_that_exist():
    for (command, option), python in table_rows().items():
        if python.startswith("—"):
            assert len(python) > 5, f"{command} {option}: a row without an API counterpart must say why"
            continue
        match = PYTHON.match(python)
        assert match, f"{command} {option}: {python!r} names no function"
        function, parameter = match[1], match[2]
        assert function in ol.__all__, f"{command} {option}: orderlab.api.{function} does not exist"
        if parameter:
            assert parameter in inspect.signature(getattr(ol, function)).parameters, f"{function}({parameter}=)"


def test_every_command_has_its_function():
    rows = table_rows()
    for command in {command for command, _ in cli_parameters()}:
        named = {PYTHON.match(python)[1] for (c, _), python in rows.items() if c == command and PYTHON.match(python)}
        assert named, f"orderlab {command} has no function in orderlab.api"


def test_the_api_lists_only_its_functions():
    assert all(callable(getattr(ol, name)) for name in ol.__all__)
    assert "yaml" not in dir(ol) and "tempfile" not in dir(ol)
    assert sorted(dir(ol)) == sorted(ol.__all__)
