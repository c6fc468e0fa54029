"""Errors a user can fix. The CLI prints them as one line and exits with code 2; never a traceback."""

from __future__ import annotations


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
        self.args = ("\n".join(str(problem) for problem in self.problems),)

    def __str__(self) -> str:
        return str(self.args[0])


def _distinct(problems: list[SpecError]) -> list[SpecError]:
    """Problems in their order, each line once (a sweep's combinations can repeat one)."""
    seen: dict[str, SpecError] = {}
    for problem in problems:
        for one in problem.problems if isinstance(problem, SpecErrors) else [problem]:
            seen.setdefault(str(one), one)
    return list(seen.values())


def as_one(problems: list[SpecError]) -> SpecError:
    """The one problem as itself, several as SpecErrors."""
    return problems[0] if len(problems) == 1 else SpecErrors(problems)


def raise_all(problems: list[SpecError]) -> None:
    """Raise every problem found (as_one); nothing when there are none."""
    if problems:
        raise as_one(problems)
