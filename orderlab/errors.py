"""Errors a user can fix. The CLI prints them as one line and exits with code 2; never a traceback."""

from __future__ import annotations

import re


class OrderlabError(Exception):
    """A problem with the user's input (spec, arguments, files), reported as one line."""

    exit_code = 2


class SpecError(OrderlabError):
    """A spec problem located at `file:line: field.path`."""

    def __init__(self, message: str, *, file: str = "", line: int | None = None, field: str = ""):
        self.file, self.line, self.field, self.detail = file, line, field, message
        where = file + (f":{line}" if line else "")
        parts = [p for p in (where, field, message) if p]
        super().__init__(": ".join(parts))


class SpecErrors(SpecError):
    """Every problem found in one spec file, one line each, so a user fixes them in one pass."""

    def __init__(self, problems: list[SpecError]):
        self.problems = _distinct(problems)
        first = self.problems[0]
        super().__init__(first.detail, file=first.file, line=first.line, field=first.field)
        self.args = ("\n".join(listing(self.problems)),)

    def __str__(self) -> str:
        return str(self.args[0])


def _distinct(problems: list[SpecError]) -> list[SpecError]:
    """Problems in their order, each line once (a sweep's combinations can repeat one)."""
    seen: dict[str, SpecError] = {}
    for problem in problems:
        for one in problem.problems if isinstance(problem, SpecErrors) else [problem]:
            seen.setdefault(str(one), one)
    return list(seen.values())


LINES_SHOWN = 20  # a listing longer than this ends in "... and N more problems"
INDEXED = re.compile(r"^(?P<base>.*)\[(?P<index>\d+)\]$")  # a field's last list index: vectors.cats[7]


def listing(problems: list[SpecError], limit: int = LINES_SHOWN) -> list[str]:
    """The lines of a listing: problems that differ only in a list's index (three vectors of 16 NaNs) grouped into
    one line naming the indices and their count, at most `limit` lines, then how many more problems there are."""
    groups: dict[tuple[str, str, str], list[tuple[SpecError, int | None]]] = {}
    for problem in problems:
        found = INDEXED.match(problem.field)
        base, index = (found["base"], int(found["index"])) if found else (problem.field, None)
        groups.setdefault((problem.file, base, problem.detail), []).append((problem, index))
    lines = [_grouped_line(base, members) for (_, base, _), members in groups.items()]
    if len(lines) <= limit:
        return lines
    left_out = sum(len(members) for members in list(groups.values())[limit - 1 :])
    return [*lines[: limit - 1], f"... and {left_out:,} more problems"]


def _grouped_line(base: str, members: list[tuple[SpecError, int | None]]) -> str:
    first = members[0][0]
    indices = [index for _, index in members if index is not None]
    if len(members) == 1 or len(indices) != len(members):
        return str(first)
    field = f"{base}[{_ranges(indices)}]"
    return str(SpecError(f"{first.detail} ({len(members)} entries)", file=first.file, line=first.line, field=field))


def _ranges(indices: list[int]) -> str:
    """[0, 1, 2, 3, 7] -> '0-3, 7'."""
    spans: list[list[int]] = []
    for index in sorted(set(indices)):
        if spans and index == spans[-1][1] + 1:
            spans[-1][1] = index
        else:
            spans.append([index, index])
    return ", ".join(str(low) if low == high else f"{low}-{high}" for low, high in spans)


def first_line(error: BaseException) -> str:
    """A library's message in one line: its first, without the colon that announces the rest; the error's type where
    its message is empty (a bare `RuntimeError()`)."""
    lines = str(error).strip().splitlines()
    return (lines[0].strip().rstrip(":") if lines else "") or type(error).__name__


def failure_line(error: BaseException) -> str:
    """Why a compiler failed, as a fallback records it: `RuntimeError: no C compiler found`, or the type alone."""
    name, line = type(error).__name__, first_line(error)
    return name if line == name else f"{name}: {line}"


def as_one(problems: list[SpecError]) -> SpecError:
    """The one problem as itself, several as SpecErrors."""
    return problems[0] if len(problems) == 1 else SpecErrors(problems)


def raise_all(problems: list[SpecError]) -> None:
    """Raise every problem found (as_one); nothing when there are none."""
    if problems:
        raise as_one(problems)
