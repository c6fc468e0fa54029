"""The registry of positional encodings: one line per encoding, plus `package.module:Class` for a user's own."""

from __future__ import annotations

import importlib

from orderlab.encodings.base import EncodingContext, PositionalEncoding
from orderlab.encodings.none import NoEncoding
from orderlab.encodings.rope import Rotary
from orderlab.encodings.sinusoidal import Sinusoidal
from orderlab.errors import OrderlabError
from orderlab.registry import Registry

__all__ = ["ENCODINGS", "EncodingContext", "PositionalEncoding", "build_encoding"]


class EncodingRegistry(Registry[type[PositionalEncoding]]):
    """Built-in encodings by name; 'package.module:Class' names a user's own class."""

    def add(self, encoding: type[PositionalEncoding]) -> None:
        self.register(encoding.name, encoding)

    def resolve(self, name: str) -> type[PositionalEncoding]:
        if ":" not in name:
            return self.get(name)
        module_name, _, class_name = name.partition(":")
        try:
            found = getattr(importlib.import_module(module_name), class_name)
        except Exception as error:  # a user's module can fail to import in any way: report it, never a traceback
            reason = " ".join(str(error).split())
            raise OrderlabError(f"cannot load encoding {name!r}: {reason}") from None
        if not (isinstance(found, type) and issubclass(found, PositionalEncoding)):
            raise OrderlabError(
                f"{name!r} is not a positional encoding; expected a subclass of "
                "orderlab.encodings.base.PositionalEncoding (see docs/encodings.md)"
            )
        return found


ENCODINGS = EncodingRegistry("encoding")
ENCODINGS.add(NoEncoding)
ENCODINGS.add(Sinusoidal)
ENCODINGS.add(Rotary)


def build_encoding(name: str, context: EncodingContext, params: dict | None = None) -> PositionalEncoding:
    return ENCODINGS.resolve(name)(context, params)
