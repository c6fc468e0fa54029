"""pydantic's validation errors as one line a user can act on: `file:line: field.path: what, expected what`.

Picks the most useful of pydantic's errors (an unknown key, with did-you-mean, else the one deepest
in the user's data) and names the field by the keys the user wrote. Pure and torch-free.
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any

from pydantic import BaseModel, ValidationError

from orderlab.core.registry import did_you_mean
from orderlab.errors import OrderlabError
from orderlab.metrics import METRICS, family_names
from orderlab.spec.schema import Spec
from orderlab.spec.yamlsource import FieldPath, LocatedDocument


def first_error(error: ValidationError, doc: LocatedDocument) -> OrderlabError:
    """The most useful of pydantic's errors: an unknown key first, else the one deepest in the user's data."""
    located = [(_data_path(e["loc"], doc.data, e["type"]), e) for e in error.errors()]
    path, first = max(located, key=lambda pair: (pair[1]["type"] == "extra_forbidden", len(pair[0])))
    kind, message = first["type"], first["msg"].removeprefix("Value error, ")
    if kind == "extra_forbidden":
        known = sorted(_known_fields(path[:-1], doc.data))
        return doc.error(path, f"unknown key {path[-1]!r}. {did_you_mean(str(path[-1]), known)}")
    if kind == "missing":
        return doc.error(path, "required field is missing")
    message = message.replace("Input should be", "expected")
    given = first.get("input")
    hint = metric_entry_hint(given) if kind == "literal_error" and path[:1] == ("metrics",) else None
    if hint:
        return doc.error(path, hint)
    if isinstance(given, str | int | float | bool):
        message = f"got {given!r}; {message}"
    return doc.error(path, message)


def metric_entry_hint(entry: object) -> str | None:
    """For a `metrics:` entry that is a row name of metrics.csv (pair_cosine), the family that writes that row."""
    if not isinstance(entry, str):
        return None
    if entry in METRICS:
        family = METRICS.get(entry).family
        if family is not None:
            return f"{entry!r} is a row of metrics.csv, written by the `{family}` entry; expected metrics: [{family}]"
    close = did_you_mean(entry, family_names())
    return f"unknown metrics entry {entry!r}. {close}" if close.startswith("Did you mean") else None


def _data_path(loc: tuple[int | str, ...], data: Any, kind: str) -> FieldPath:
    """The part of an error location that names keys the user wrote (pydantic's union-member tags dropped).

    A missing field is kept as the last part, since the user did not write it.
    """
    path: list[str | int] = []
    for index, part in enumerate(loc):
        in_dict = isinstance(data, dict) and part in data
        in_list = isinstance(data, list) and isinstance(part, int) and part < len(data)
        if in_dict or in_list:
            data = data[part]
        elif kind == "missing" and index == len(loc) - 1 and isinstance(data, dict):
            data = None
        else:
            continue
        path.append(part)
    return tuple(path)


def _known_fields(path: FieldPath, data: Any) -> set[str]:
    """Field names allowed at `path`, found by walking the models along the user's data."""
    annotation: Any = Spec
    for part in path:
        if isinstance(data, dict):
            data = data[part]
        elif isinstance(data, list):
            assert isinstance(part, int)  # _data_path keeps only the parts that index the user's data
            data = data[part]
        else:
            data = None
        model = _pick_model(annotation, data)
        if model is not None and isinstance(part, str):
            annotation = model.model_fields[part].annotation
        elif isinstance(part, int):
            annotation = _item_type(annotation)
        else:
            args = [a for a in typing.get_args(_strip(annotation)) if a is not type(None)]
            annotation = args[0] if args else Any
    model = _pick_model(annotation, data)
    return set(model.model_fields) if model else set()


def _item_type(annotation: Any) -> Any:
    """The item type of a list annotation, looking through Annotated and unions (as in `Inputs`)."""
    annotation = _strip(annotation)
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    for member in map(_strip, typing.get_args(annotation) if union else (annotation,)):
        if typing.get_origin(member) is list:
            return typing.get_args(member)[0]
    return Any


def _strip(annotation: Any) -> Any:
    while typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _pick_model(annotation: Any, data: Any) -> type[BaseModel] | None:
    annotation = _strip(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        models = [
            m for m in map(_strip, typing.get_args(annotation)) if isinstance(m, type) and issubclass(m, BaseModel)
        ]
        kind = data.get("kind") if isinstance(data, dict) else None
        for model in models:
            if "kind" in model.model_fields and typing.get_args(model.model_fields["kind"].annotation) == (kind,):
                return model
        return models[0] if models else None
    return None
