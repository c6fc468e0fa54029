"""What a table drawn for a console of some width must be: every line within the width, no box left open, nothing
cut short with an ellipsis. Shared by the tests of every table orderlab prints."""

from __future__ import annotations

import io

from rich.console import Console


def render(tables, width: int = 80) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    for table in tables:
        console.print(table)
    return console.file.getvalue()


BOX_EDGES = set("│┃┏┓┗┛┡┩└┘├┤┣┫╇┳┻┼╋━─┯┷╈")


def assert_nothing_cropped(text: str, width: int) -> None:
    """Every line fits, and every line of a table's box closes with its right border (a cropped table's do not)."""
    for line in text.splitlines():
        assert len(line.rstrip()) <= width, line
        body = line.strip()
        if body and body[0] in BOX_EDGES:
            assert body[-1] in BOX_EDGES, f"cropped at {width}: {line!r}"
    assert "…" not in text
