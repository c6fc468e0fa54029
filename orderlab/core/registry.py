"""A name -> object registry that refuses duplicates and answers unknown names with a did-you-mean."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Generic, TypeVar

from orderlab.errors import OrderlabError

T = TypeVar("T")


def did_you_mean(name: str, choices: list[str]) -> str:
    """' Did you mean: x?' when a choice is close to `name`, else a list of the choices."""
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    if close:
        return f"Did you mean: {close[0]}?"
    return "Expected one of: " + ", ".join(choices) + "."


class Registry(Generic[T]):
    """Named objects of one kind (`what` names the kind in error messages)."""

    def __init__(self, what: str):
        self.what = what
        self._items: dict[str, T] = {}

    def register(self, name: str, item: T) -> T:
        if name in self._items:
            raise ValueError(f"{self.what} {name!r} is already registered")
        self._items[name] = item
        return item

    def unregister(self, name: str) -> None:
        """Forget `name` (a plug-in's registration undone, as a test does after adding one)."""
        self.get(name)
        del self._items[name]

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            raise OrderlabError(f"Unknown {self.what} {name!r}. {did_you_mean(name, self.names())}") from None

    def names(self) -> list[str]:
        return list(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)
