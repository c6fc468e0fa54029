"""The one shape of progress that long work reports, so compute stays free of the terminal: report/ draws it.

In core/, the bottom layer, so that every layer that reports progress (training, measuring, checking, figures)
takes the same types, and every command reports its phases through one protocol. Imports only the standard library.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

Progress = Callable[[int, int], None]  # (done, total) units of work: sequences, training steps, specs
Note = Callable[[str], None]  # what the work is doing now, shown beside the bar: 'training rope: step 40/200, loss 0.5'


class Reporter(Protocol):
    """What a phase of work reports to while it runs: (done, total), and a note of what it is doing."""

    def __call__(self, done: int, total: int) -> None: ...

    def note(self, text: str) -> None: ...


class Phases(Protocol):
    """A command's long phases (measuring, figures, a report), each reported while it runs: report/ draws them on a
    terminal or in a notebook; SILENT keeps them to itself."""

    def phase(self, name: str, description: str, unit: str | None = None) -> AbstractContextManager[Reporter]: ...


class _Quiet:
    def __call__(self, done: int, total: int) -> None:
        pass

    def note(self, text: str) -> None:
        pass


class _Silent:
    @contextmanager
    def phase(self, name: str, description: str, unit: str | None = None) -> Iterator[Reporter]:
        yield _Quiet()


SILENT: Phases = _Silent()  # phases that report nowhere: a command called without a display
