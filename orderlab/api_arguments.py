"""orderlab.api's arguments checked at the door: any wrong type or value is one OrderlabError line naming the
argument, as the CLI's parser would refuse it, never a TypeError from deep inside (or a string read as a list of
its characters).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from orderlab.core.device_choices import DEVICE_CHOICES
from orderlab.errors import OrderlabError

LARGEST_INT = 2**63 - 1  # no count or seed in a spec or an argument comes near it
DEEPEST = 64  # nesting of a spec dict: real specs are 4 deep


def _refuse(name: str, value: object, expected: str) -> OrderlabError:
    return OrderlabError(f"{name}={shown(value)}: expected {expected}")


def shown(value: object) -> str:
    """A value as a message shows it: short, on one line, a huge integer by its size (Python will not print one
    past 4300 digits)."""
    if isinstance(value, int) and value.bit_length() > 200:
        return "a huge integer"
    if isinstance(value, str | int | float | bool | type(None)):
        return _short(repr(value))
    return type(value).__name__


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def path(name: str, value: object) -> Path:
    """A file or folder path: str or os.PathLike, not empty, no line break or other control character."""
    if not isinstance(value, str | os.PathLike) or isinstance(value, bytes):
        raise _refuse(name, value, "a path (str or pathlib.Path)")
    text = os.fspath(value)
    if not isinstance(text, str) or not text or any(ord(c) < 32 or c == "\x7f" for c in text):
        raise _refuse(name, value, "a path: not empty, without line breaks or control characters")
    return Path(text)


def optional_path(name: str, value: object) -> Path | None:
    return None if value is None else path(name, value)


def paths(name: str, value: object) -> list[Path]:
    """One path, or a list or tuple of them (a single path is one item, never a sequence of its characters)."""
    if isinstance(value, str | os.PathLike):
        return [path(name, value)]
    if not isinstance(value, list | tuple) or not value:
        raise _refuse(name, value, "a path or a non-empty list of paths")
    return [path(f"{name}[{index}]", item) for index, item in enumerate(value)]


def names(name: str, value: object) -> list[str]:
    """One name, or a list or tuple of names (metrics='equivariance' is one metric, not eleven letters)."""
    if isinstance(value, str):
        return [text(name, value)]
    if not isinstance(value, list | tuple) or not value:
        raise _refuse(name, value, "a name or a non-empty list of names")
    return [text(f"{name}[{index}]", item) for index, item in enumerate(value)]


def text(name: str, value: object, empty: bool = False) -> str:
    if not isinstance(value, str) or (not value and not empty) or any(ord(c) < 32 for c in value):
        raise _refuse(name, value, "a string" + ("" if empty else ", not empty") + ", without control characters")
    return value


def integer(name: str, value: object, low: int, high: int = LARGEST_INT) -> int:
    """An int (not a bool, not a string of digits) within [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise _refuse(name, value, f"an integer from {low} to {high}")
    if not low <= value <= high:
        raise OrderlabError(f"{name}={shown(value)}: expected an integer from {low} to {high}")
    return value


def optional_integer(name: str, value: object, low: int, high: int = LARGEST_INT) -> int | None:
    return None if value is None else integer(name, value, low, high)


def tolerance(name: str, value: object) -> float | None:
    """None (the spec's or dtype's default) or a finite number >= 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _refuse(name, value, "a finite number >= 0, or None")
    number = float(value) if not isinstance(value, int) or value.bit_length() < 1000 else math.inf
    if not math.isfinite(number) or number < 0:
        raise _refuse(name, value, "a finite number >= 0, or None")
    return number


def flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise _refuse(name, value, "True or False")
    return value


def hooks(value: object) -> dict[str, Callable[[Any], Any]]:
    """A user's functions at hook points, {"2.output": fn}: names to callables (None: none)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):  # names are checked against the vocabulary where the spec records them
        raise _refuse("hooks", value, 'a dict of hook points to functions, e.g. {"2.output": fn}')
    for point, function in value.items():  # LAYER.POINT, or a whole pass's point (a causal LM's logits)
        if not isinstance(point, str) or not re.fullmatch(r"(?:[0-9]{1,4}\.)?[a-z_]{1,32}", point):
            raise OrderlabError(f"hooks: key {shown(point)}; expected a hook point named LAYER.POINT, e.g. '2.output'")
        if not callable(function):
            raise OrderlabError(f"hooks: {point!r}: {shown(function)}; expected a function of a tensor")
    return dict(value)


def permutation_rule(name: str, value: object) -> Any:
    """A permutation rule as a spec's inputs take it ('all', {random: K}, [[2, 1, 0]], ...), checked by the spec's
    own type."""
    from pydantic import TypeAdapter, ValidationError

    from orderlab.spec.schema import PermutationRule

    try:
        return TypeAdapter(PermutationRule).validate_python(value)
    except (ValidationError, ValueError, TypeError):
        expected = "a permutation rule, as inputs take ('all', 'reverse', {random: K}, [[1, 0, 2]])"
        raise _refuse(name, value, expected) from None


def device(value: object) -> str:
    """'cpu', 'cuda' or 'auto' (a torch.device of cpu or cuda is taken by its name)."""
    named = str(value) if type(value).__name__ == "device" and type(value).__module__ == "torch" else value
    if named not in DEVICE_CHOICES:
        raise _refuse("device", value, f"{', '.join(map(repr, DEVICE_CHOICES[:-1]))} or {DEVICE_CHOICES[-1]!r}")
    assert isinstance(named, str)
    return named


def progress(value: object) -> bool | Callable[[int, int], None]:
    """True (a bar), False or None (none: None as orderlab 0.1 took it), or a function given (done, total)."""
    if value is None:
        return False
    if isinstance(value, bool) or callable(value):
        return value
    raise _refuse("progress", value, "True, False or a function (done, total)")


def spec_source(value: object) -> Path | dict[str, Any]:
    """A spec file's path, or the spec as a dict of YAML values (paths inside it as strings)."""
    if isinstance(value, Mapping):
        return plain(value, "spec", 0)  # type: ignore[return-value]
    return path("spec", value)


def plain(value: object, where: str, depth: int) -> object:
    """`value` as plain YAML data (dict, list, str, int, float, bool, None; a path as its string), or one line naming
    the field that is not."""
    if depth > DEEPEST:
        raise OrderlabError(f"{where}: nested more than {DEEPEST} deep; expected a spec's fields")
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise _refuse(f"{where} key", key, "a string")
        return {key: plain(item, f"{where}.{key}", depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item, f"{where}[{index}]", depth + 1) for index, item in enumerate(value)]
    if isinstance(value, os.PathLike) and not isinstance(value, bytes):
        return os.fspath(value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > LARGEST_INT:
        raise OrderlabError(f"{where}: an integer of many digits; expected one below {LARGEST_INT:,}")
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise _refuse(where, value, "a YAML value: str, int, float, bool, None, a list or a dict")
