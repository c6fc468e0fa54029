"""Safe YAML reading that remembers where every value came from.

Returns plain Python data plus a map from field paths to line numbers, so that a validation
error can say `file:line: field.path: ...`. Refuses files that are not regular or are larger than
MAX_SPEC_BYTES (unread), duplicate keys, non-string keys, alias bombs (documents whose aliases
expand past a size limit) and integers too long to parse. Must not import torch or pandas.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import yaml

from orderlab.core.userfiles import read_bounded
from orderlab.errors import SpecError

# A spec expanded past this many YAML nodes is refused: real specs have a few hundred.
MAX_EXPANDED_NODES = 200_000
# Deeper nesting is refused: a spec is a few levels deep, and PyYAML's composer recurses per level.
MAX_DEPTH = 100
# A larger file is refused unread. The shipped specs are under 2 kB; explicit vectors for a hundred
# 64-wide words are ~130 kB. PyYAML's Python loader (twice: nesting check, then compose) took 1.3 s per
# 115 kB on this 2-core machine under load, so 256 KiB keeps `validate` to a few seconds at worst.
MAX_SPEC_BYTES = 256 * 2**10

# A longer YAML integer is refused before it is parsed: past 4300 digits Python's int() raises, and no field of
# a spec needs more than a 64-bit seed's 20.
MAX_INT_CHARS = 100
INT_TAG = "tag:yaml.org,2002:int"
BOOL_TAG = "tag:yaml.org,2002:bool"


class SpecLoader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2's booleans: only true and false. YAML 1.1 also reads yes, no, on, off, y
    and n as booleans, so `probes: [[on, off]]` or `sentence: no` would reach the spec as True and False."""


SpecLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != BOOL_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
SpecLoader.add_implicit_resolver(BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))

FieldPath = tuple[str | int, ...]


class LocatedDocument:
    """YAML data and the 1-based line of every field path in it."""

    def __init__(self, data: Any, lines: dict[FieldPath, int], file: str):
        self.data, self.lines, self.file = data, lines, file
        self.sha256 = ""  # of the file's bytes, set by read_yaml: the file is read once
        # The spec file that relative paths in it (a model folder, a corpus file) hang from; a dict spec's sits in
        # the folder its paths are relative to.
        self.origin = Path(file)

    def line_of(self, path: FieldPath) -> int | None:
        """Line of the deepest prefix of `path` that the document has (the parent of a missing key)."""
        for cut in range(len(path), -1, -1):
            if path[:cut] in self.lines:
                return self.lines[path[:cut]]
        return None

    def error(self, path: FieldPath, message: str) -> SpecError:
        return SpecError(message, file=self.file, line=self.line_of(path), field=format_path(path))


def format_path(path: FieldPath) -> str:
    """('inputs', 0, 'sentence') -> 'inputs[0].sentence'."""
    text = ""
    for part in path:
        if isinstance(part, int) or not _plain(part):
            text += f"[{part!r}]"  # a key with spaces or line breaks is quoted, keeping the message on one line
        else:
            text += f".{part}" if text else part
    return text


def _plain(key: str) -> bool:
    return bool(key) and key.isprintable() and not any(c.isspace() for c in key)


def read_yaml(path: Path) -> LocatedDocument:
    """Read and parse `path`; every problem becomes a one-line SpecError."""
    file = str(path)
    try:
        raw = read_bounded(path, MAX_SPEC_BYTES)
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise SpecError("file not found", file=file) from None
    except IsADirectoryError:
        raise SpecError("is a directory, expected a YAML spec file", file=file) from None
    except ValueError as error:  # too large, or not a regular file (UnicodeDecodeError is a ValueError too)
        raise SpecError(f"cannot read: {error}; expected a YAML spec file", file=file) from None
    except OSError as error:
        raise SpecError(f"cannot read: {error}", file=file) from None
    document = parse_yaml(text, file)
    document.sha256 = hashlib.sha256(raw).hexdigest()
    return document


def parse_yaml(text: str, file: str = "<string>") -> LocatedDocument:
    try:
        _refuse_deep_nesting(text, file)
        node = yaml.compose(text, Loader=SpecLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        line = mark.line + 1 if mark is not None else None
        raise SpecError(f"not valid YAML: {problem}", file=file, line=line) from None
    if node is None:
        raise SpecError("the file is empty, expected a YAML mapping (name, model, inputs, ...)", file=file)
    _refuse_alias_bombs(node, file)
    lines: dict[FieldPath, int] = {}
    _walk(node, (), lines, file)
    try:
        data = SpecLoader("").construct_document(node)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise SpecError(f"not valid YAML: {getattr(error, 'problem', error)}", file=file, line=line) from None
    return LocatedDocument(data, lines, file)


def _walk(node: yaml.Node, path: FieldPath, lines: dict[FieldPath, int], file: str) -> None:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
                raise SpecError("keys must be plain names", file=file, line=key_line, field=format_path(path))
            key = key_node.value
            if key in seen:
                raise SpecError(
                    f"duplicate key {key!r} (first given on line {seen[key]}); each key may appear once",
                    file=file,
                    line=key_line,
                    field=format_path(path),
                )
            seen[key] = key_line
            lines[(*path, key)] = key_line
            _walk(value_node, (*path, key), lines, file)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*path, index), lines, file)
    elif node.tag == INT_TAG and len(node.value) > MAX_INT_CHARS:
        raise SpecError(
            f"an integer of {len(node.value):,} characters; expected at most {MAX_INT_CHARS}",
            file=file,
            line=node.start_mark.line + 1,
            field=format_path(path),
        )


def _refuse_deep_nesting(text: str, file: str) -> None:
    """Refuse nesting past MAX_DEPTH from the event stream, before the recursive composer overflows the stack."""
    depth = 0
    for event in yaml.parse(text, Loader=SpecLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                assert event.start_mark is not None  # the parser marks every event it emits
                raise SpecError(f"nested more than {MAX_DEPTH} levels deep", file=file, line=event.start_mark.line + 1)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _refuse_alias_bombs(root: yaml.Node, file: str) -> None:
    """Count nodes as if every alias were expanded (memoised, so linear in the document)."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise SpecError(f"nested more than {MAX_DEPTH} levels deep", file=file, line=node.start_mark.line + 1)
        if id(node) in sizes:
            return sizes[id(node)]
        sizes[id(node)] = MAX_EXPANDED_NODES + 1  # a node that contains itself is unbounded
        children: list[yaml.Node] = []
        if isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        total = 1
        for child in children:
            total += size(child, depth + 1)
            if total > MAX_EXPANDED_NODES:
                break
        sizes[id(node)] = total
        return total

    if size(root, 0) > MAX_EXPANDED_NODES:
        raise SpecError(
            f"the document expands to more than {MAX_EXPANDED_NODES:,} values through YAML aliases; "
            "refusing it (write the values out instead)",
            file=file,
        )
