"""The one reader of files orderlab did not write: never blocks, never reads past its bound, one line per fault."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field

from orderlab.core.userfiles import FileModel, FileProblem, SafeName, json_object_lines, read_json, read_text


class Shard(FileModel):
    name: SafeName
    index: int = Field(ge=1, le=10_000)


def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path: Path):
    fifo = tmp_path / "manifest.json"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []
    reader = threading.Thread(target=lambda: outcome.append(_raised(lambda: read_text(fifo, 100, "a manifest"))))
    reader.start()
    reader.join(timeout=5)
    assert not reader.is_alive(), "reading a FIFO blocked"
    assert isinstance(outcome[0], FileProblem)
    assert "not a regular file" in str(outcome[0]) and str(fifo) in str(outcome[0])


def test_a_device_is_refused():
    with pytest.raises(FileProblem, match="not a regular file"):
        read_text(Path("/dev/zero"), 100, "a manifest")


def test_a_file_over_its_bound_is_refused_before_it_is_read(tmp_path: Path):
    big = tmp_path / "config.json"
    big.write_text(" " * 2049)
    with pytest.raises(FileProblem, match="2,049 bytes, over the limit of 2 KiB"):
        read_text(big, 2048, "a config")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"name": "a", "index": NaN}', "not valid JSON"),
        ('{"name": "a", "index": ' + "9" * 5000 + "}", "not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "nested too deep"),
        ('["name", 1]', "a JSON list; expected a shard manifest"),
        ('{"name": "../../escaped", "index": 1}', "name: got '../../escaped'; expected letters"),
        ('{"name": "/abs", "index": 1}', "name: got '/abs'"),
        ('{"name": "ok", "index": 1000000000000}', "index: got 1000000000000; expected"),
        ('{"name": "ok"}', "index: missing"),
        ('{"name": "ok", "index": "one"}', "index: got 'one'"),
    ],
)
def test_a_malformed_file_is_one_line_naming_file_and_field(tmp_path: Path, text: str, message: str):
    path = tmp_path / "manifest.json"
    path.write_text(text)
    with pytest.raises(FileProblem) as raised:
        read_json(path, Shard, "a shard manifest")
    line = str(raised.value)
    assert "\n" not in line and line.startswith(str(path)) and message in line


class Counts(FileModel):
    counts: dict[str, list[int]]


@pytest.mark.parametrize("key", ["\r", "\n", "a\x1b[2Jb", "\u2028"])
def test_a_field_named_with_a_control_character_is_shown_escaped_on_one_line(tmp_path: Path, key: str):
    path = tmp_path / "partials.json"
    path.write_text(json.dumps({"counts": {key: None}}))
    with pytest.raises(FileProblem) as raised:
        read_json(path, Counts, "a shard's partials")
    line = str(raised.value)
    assert line.isprintable() and f"counts.{key!a}: " in line  # a carriage return would end the line shown


def test_a_good_file_reads_as_its_model(tmp_path: Path):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"name": "dog-bites-man", "index": 3, "unknown": [1, 2]}))
    assert read_json(path, Shard, "a shard manifest") == Shard(name="dog-bites-man", index=3)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(data=JSON, name=st.text(max_size=30), index=st.integers() | st.text(max_size=5) | st.none())
def test_any_json_is_read_or_refused_in_one_line(tmp_path_factory: pytest.TempPathFactory, data, name, index):
    path = tmp_path_factory.mktemp("fuzz") / "manifest.json"
    for value in (data, {"name": name, "index": index, "extra": data}):
        path.write_text(json.dumps(value))
        try:
            shard = read_json(path, Shard, "a shard manifest")
        except FileProblem as problem:
            assert "\n" not in str(problem)
        else:
            assert 1 <= shard.index <= 10_000 and "/" not in shard.name and not shard.name.startswith(".")


def _raised(call) -> BaseException | None:
    try:
        call()
    except BaseException as error:  # the test inspects it
        return error
    return None


@pytest.mark.parametrize(
    ("line", "fragment"),
    [("[1, 2]", "data.jsonl:3: a JSON list; expected one object"), ('{"a": NaN}', "data.jsonl:3: not valid JSON"),
     ("{oops", "data.jsonl:3: not valid JSON"), ("[" * 100_000, "data.jsonl:3: JSON nested too deep")],
)  # fmt: skip
def test_json_lines_are_objects_with_their_numbers_and_a_bad_one_is_file_line(line, fragment):
    text = '{"a": 1}\n\n' + line + "\n"
    with pytest.raises(FileProblem, match=fragment.replace("[", r"\[")):
        list(json_object_lines(Path("data.jsonl"), text, "one object"))
    assert list(json_object_lines(Path("data.jsonl"), '{"a": 1}\n  \n{"b": [2]}\n', "one object")) == [
        (1, {"a": 1}), (3, {"b": [2]})]  # fmt: skip
