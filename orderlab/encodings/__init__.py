"""The registry of positional encodings: one ENCODINGS.add line per built-in, plus `package.module:Class` for a
user's own. Torch-free at import (encodings import torch inside their hooks), so the spec layer above reads it
directly to validate names and parameters."""

from __future__ import annotations

import importlib
from typing import Any

from orderlab.core.registry import Registry
from orderlab.encodings.alibi import Alibi
from orderlab.encodings.cope import Cope
from orderlab.encodings.encoding import EncodingContext, PositionalEncoding
from orderlab.encodings.learned import Learned
from orderlab.encodings.none import NoEncoding
from orderlab.encodings.plugin_guard import CheckedEncoding, guarded, validate_class, validate_hooks
from orderlab.encodings.rope import Rotary
from orderlab.encodings.sinusoidal import Sinusoidal
from orderlab.encodings.t5_bias import T5Bias
from orderlab.encodings.xpos import Xpos

__all__ = ["ENCODINGS", "EncodingContext", "PositionalEncoding", "build_encoding"]


class EncodingRegistry(Registry[type[PositionalEncoding]]):
    """Built-in encodings by name; 'package.module:Class' names a user's own class."""

    def add(self, encoding: type[PositionalEncoding]) -> None:
        self.register(encoding.name, encoding)

    def resolve(self, name: str) -> type[PositionalEncoding]:
        if ":" not in name:
            return self.get(name)
        module_name, _, class_name = name.partition(":")
        found = guarded(name, "at import", lambda: getattr(importlib.import_module(module_name), class_name))
        return validate_class(name, found)

    def validate(self, name: str, context: EncodingContext, params: dict[str, Any]) -> None:
        """Raise ValueError when encoding `name` cannot run in `context` with `params` (its classmethod `check`).

        A user's `check` that fails in any other way is an OrderlabError naming the class.
        """
        found = self.resolve(name)
        if ":" in name:
            guarded(name, "in validate", found.validate, context, params, passing=(ValueError,))
        else:
            found.validate(context, params)


ENCODINGS = EncodingRegistry("encoding")
ENCODINGS.add(NoEncoding)
ENCODINGS.add(Sinusoidal)
ENCODINGS.add(Rotary)
ENCODINGS.add(Learned)
ENCODINGS.add(Alibi)
ENCODINGS.add(T5Bias)
ENCODINGS.add(Xpos)
ENCODINGS.add(Cope)


def build_encoding(name: str, context: EncodingContext, params: dict[str, Any] | None = None) -> PositionalEncoding:
    """The encoding `name` built for `context`; a user's class comes wrapped in CheckedEncoding, hooks tried once."""
    found = ENCODINGS.resolve(name)
    if ":" not in name:  # built-ins are trusted: no wrapper on the hot path
        return found(context, params)
    encoding = guarded(name, "in __init__", lambda: CheckedEncoding(name, found(context, params)))
    validate_hooks(encoding)
    return encoding
