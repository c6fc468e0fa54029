"""Tables that fit the console: columns measured by their widest cell and cut into as many tables as it takes, so
that no cell, header or name is ever cropped at any width (60, 80 or 120 columns alike)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions
from rich.table import Table
from rich.text import Text

# What a table's column takes beyond its widest cell: a space of padding either side and one border line.
COLUMN_CHROME = 3
# A column of prose or of vectors wraps at spaces; to fit a table it counts this wide (or its longest word).
WRAPPED_WIDTH = 16


def column_width(header: str, cells: Sequence[Text | str]) -> int:
    """The console columns a no-wrap column needs: its widest line of a cell or header, padding and border."""
    texts = [Text(header), *(cell if isinstance(cell, Text) else Text(cell) for cell in cells)]
    return max(Text(line).cell_len for text in texts for line in text.plain.split("\n")) + COLUMN_CHROME


def fitting_groups(widths: dict[str, int], room: int) -> list[list[str]]:
    """The columns in order, cut into consecutive groups whose widths add up to at most `room` (one column a group
    at least): each group is one table of a width that fits, so no column is cropped. As few groups as fit, as
    even as they go (two tables of two columns rather than three and one)."""
    fewest = len(_groups_within(widths, room))
    even = -(-sum(widths.values()) // fewest)  # the total split evenly, rounded up
    for target in range(min(even, room), room + 1):
        groups = _groups_within(widths, target)
        if len(groups) == fewest:
            return groups
    return _groups_within(widths, room)


def _groups_within(widths: dict[str, int], room: int) -> list[list[str]]:
    groups: list[list[str]] = []
    used = room + 1
    for name, needed in widths.items():
        if groups and used + needed <= room:
            groups[-1].append(name)
            used += needed
        else:
            groups.append([name])
            used = needed
    return groups


@dataclass(frozen=True)
class Column:
    """One column of a fitted table: its header, a cell per row, and whether it may wrap (prose, vectors) or
    must stay on one line per cell (numbers, names)."""

    header: str
    cells: Sequence[Text | str]
    justify: Literal["left", "right"] = "right"
    wrap: bool = False
    width: int = field(init=False)

    def __post_init__(self) -> None:
        whole = column_width(self.header, self.cells)
        if self.wrap:  # it may wrap down to its longest word, but counts at least WRAPPED_WIDTH wide
            words = [word for cell in [self.header, *self.cells] for word in Text(str(cell)).plain.split()]
            narrowest = max([WRAPPED_WIDTH, *(Text(word).cell_len for word in words)]) + COLUMN_CHROME
            whole = min(whole, narrowest)
        object.__setattr__(self, "width", whole)

    def add_to(self, table: Table) -> None:
        if self.wrap:
            table.add_column(self.header, justify=self.justify, overflow="fold")
        else:
            table.add_column(self.header, justify=self.justify, no_wrap=True)


def fitted_tables(
    title: str,
    caption: str | None,
    keys: list[Column],
    values: list[Column],
    width: int,
    sections: Sequence[int] = (),
    table_box: box.Box | None = box.HEAVY_HEAD,
    pad_edge: bool = True,
) -> list[Table]:
    """The table of `keys` and `values` columns, cut into as many tables as `width` needs: every table repeats the
    keys and takes the next values that fit beside them. The title heads the first table, the caption ends the
    last; `sections` are the rows a rule goes above."""
    room = width - 1 - sum(column.width for column in keys)  # the table's left border, then the keys
    by_name = {str(index): column for index, column in enumerate(values)}
    groups = fitting_groups({name: column.width for name, column in by_name.items()}, room) if values else [[]]
    rows = len(keys[0].cells) if keys else len(values[0].cells)
    tables = []
    for index, group in enumerate(groups):
        shown = [*keys, *(by_name[name] for name in group)]
        caption_shown = caption if index == len(groups) - 1 else None
        table = Table(
            title=title if index == 0 else None,
            caption=caption_shown,
            title_justify="left",
            box=table_box,
            pad_edge=pad_edge,
        )
        for column in shown:
            column.add_to(table)
        for row in range(rows):
            if row in sections and row > 0:
                table.add_section()
            table.add_row(*(as_text(column.cells[row]) for column in shown))
        tables.append(table)
    return tables


def as_text(cell: Text | str) -> Text:
    """A cell as text, never read as markup: a word such as '[b]' or '[unused0]' is shown as it is."""
    return cell if isinstance(cell, Text) else Text(cell)


class LegendCaption:
    """A caption wrapped at its table's width, never between a mark and its meaning: "✗ = order-sensitive" and
    "(0 = the input" keep the words either side of their "=" on one line. A rich renderable, which rich's Table
    draws as a caption as it draws a string (in the caption's style), though its type names only text."""

    def __init__(self, text: str):
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        yield Text("\n".join(legend_lines(self.text, options.max_width)), style="table.caption")


def legend_lines(text: str, width: int) -> list[str]:
    """`text` cut at spaces into lines of at most `width` cells, each "a = b" kept whole (a longer one alone on
    its line, where rich wraps it further)."""
    words: list[str] = []
    for word in text.split(" "):
        if words and (word == "=" or words[-1].endswith(" =")):
            words[-1] += f" {word}"
        else:
            words.append(word)
    lines: list[str] = []
    for word in words:
        if lines and cell_len(f"{lines[-1]} {word}") <= width:
            lines[-1] += f" {word}"
        else:
            lines.append(word)
    return lines
