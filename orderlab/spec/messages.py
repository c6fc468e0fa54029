"""pydantic's validation errors as one line a user can act on: `file:line: field.path: what, expected what`.

One line per field the user got wrong (of a field's several errors the most useful: an unknown key, with
did-you-mean, else the one deepest in the user's data), naming the field by the keys the user
wrote. Pure and torch-free.
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from orderlab.core.registry import did_you_mean
from orderlab.errors import SpecError
from orderlab.metrics import METRICS, family_names
from orderlab.spec.schema import UNKNOWN_NAME, Spec
from orderlab.spec.yamlsource import FieldPath, LocatedDocument


def all_errors(error: ValidationError, doc: LocatedDocument) -> list[SpecError]:
    """One line per problem: pydantic's errors grouped by the field the user wrote (a union's members report one
    problem several times, at paths that extend one another), the most useful of each group, in the file's order."""
    located = [(_data_path(e["loc"], doc.data, e["type"]), e) for e in error.errors()]
    misspelt = {path[:-1] for path, e in located if e["type"] == "extra_forbidden"}
    located = [
        (p, e) for p, e in located if not (e["type"] == "missing" and p[:-1] in misspelt)
    ]  # did-you-mean says it
    groups: list[list[tuple[FieldPath, ErrorDetails]]] = []
    for path, detail in located:
        group = next((g for g in groups if any(_nested(path, other) for other, _ in g)), None)
        if group is None:
            groups.append([(path, detail)])
        else:
            group.append((path, detail))
    best = [max(group, key=lambda pair: (pair[1]["type"] == "extra_forbidden", len(pair[0]))) for group in groups]
    best.sort(key=lambda pair: doc.line_of(pair[0]) or 0)
    return [_one_line(path, detail, doc) for path, detail in best]


def _nested(a: FieldPath, b: FieldPath) -> bool:
    """One path is the other or lies inside it (the spec's root holds everything, so it groups only with itself)."""
    if not a or not b:
        return a == b
    return a[: len(b)] == b or b[: len(a)] == a


def _one_line(path: FieldPath, first: ErrorDetails, doc: LocatedDocument) -> SpecError:
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
    if isinstance(given, str | int | float | bool) and kind != UNKNOWN_NAME:  # that message names what it got
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
        model = _pick_model(annotation, data)  # picked by the data it describes (a union by its `kind`)
        if isinstance(data, dict):
            data = data[part]
        elif isinstance(data, list):
            assert isinstance(part, int)  # _data_path keeps only the parts that index the user's data
            data = data[part]
        else:
            data = None
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
