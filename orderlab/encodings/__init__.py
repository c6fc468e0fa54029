"""The registry of positional encodings: one line per encoding, plus `package.module:Class` for a user's own."""

from __future__ import annotations

import importlib

from orderlab.encodings.alibi import Alibi
from orderlab.encodings.base import EncodingContext, PositionalEncoding
from orderlab.encodings.cope import Cope
from orderlab.encodings.learned import Learned
from orderlab.encodings.none import NoEncoding
from orderlab.encodings.protocol import check_class, check_hooks
from orderlab.encodings.rope import Rotary
from orderlab.encodings.sinusoidal import Sinusoidal
from orderlab.encodings.t5 import T5Bias
from orderlab.encodings.xpos import Xpos
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
            raise OrderlabError(f"cannot load encoding {name!r}: {type(error).__name__}: {reason}") from None
        check_class(name, found)
        return found


ENCODINGS = EncodingRegistry("encoding")
ENCODINGS.add(NoEncoding)
ENCODINGS.add(Sinusoidal)
ENCODINGS.add(Rotary)
ENCODINGS.add(Learned)
ENCODINGS.add(Alibi)
ENCODINGS.add(T5Bias)
ENCODINGS.add(Xpos)
ENCODINGS.add(Cope)


def build_encoding(name: str, context: EncodingContext, params: dict | None = None) -> PositionalEncoding:
    encoding = ENCODINGS.resolve(name)(context, params)
    if ":" in name:  # a user's class: try its hooks once before trusting them with a run
        check_hooks(name, encoding)
    return encoding
