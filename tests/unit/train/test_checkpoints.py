"""Checkpoints are a stranger's files (issue 22): a checkpoint whose metadata, tensors or bytes are not what orderlab
wrote, or that a spec would measure under another encoding or seed, is one line and exit 2, never a traceback, a
hang or a result labelled with what it is not."""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from click.testing import Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.torch import load_file, save_file

from orderlab.cli import app
from orderlab.errors import OrderlabError
from orderlab.spec.load import load_spec
from orderlab.train.checkpoint import load_checkpoint

TRAINED = """\
name: tiny_learned
model: {d_model: 8, n_heads: 2, n_layers: 1, dtype: float64}
encodings: [{name: learned, max_len: 6}]
inputs: [{sentence: word1 word2 word3, permutations: all}]
metrics: [invariance]
train: {task: first_word, train_lengths: [3, 4], vocabulary: 8, steps: 3, batch: 8}
"""
MEASURE = """\
model: {kind: checkpoint, path: CHECKPOINT}
inputs: [{sentence: word1 word2 word3, permutations: all}]
metrics: [invariance]
"""


@pytest.fixture(scope="module")
def trained() -> Iterator[Path]:
    """A checkpoint orderlab wrote: a learned encoding, so it holds a trained table beside the layers."""
    from typer.testing import CliRunner

    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "trained.yaml").write_text(TRAINED)
        result = CliRunner().invoke(app, ["run", str(folder / "trained.yaml"), "--out", str(folder), "-q"])
        assert result.exit_code == 0, result.output
        yield folder / "tiny_learned" / "checkpoints" / "learned(max_len=6).safetensors"


def metadata_of(checkpoint: Path) -> dict[str, Any]:
    header = checkpoint.read_bytes()
    length = int.from_bytes(header[:8], "little")
    metadata: dict[str, Any] = json.loads(json.loads(header[8 : 8 + length])["__metadata__"]["orderlab"])
    return metadata


Change = Callable[[dict[str, torch.Tensor]], object]


def rewrite(checkpoint: Path, folder: Path, metadata: str | None = None, change: Change | None = None) -> Path:
    """A copy of the checkpoint in `folder` with its metadata text replaced and/or its tensors changed."""
    tensors = load_file(str(checkpoint))
    if change:
        change(tensors)
    text = metadata if metadata is not None else json.dumps(metadata_of(checkpoint))
    copy = folder / "copy.safetensors"
    save_file(tensors, str(copy), metadata={"orderlab": text})
    return copy


def measuring_spec(folder: Path, checkpoint: Path, extra: str = "") -> Path:
    spec = folder / "measure.yaml"
    spec.write_text(MEASURE.replace("CHECKPOINT", json.dumps(str(checkpoint))) + extra)
    return spec


def one_line(result: Result, *expected: str) -> str:
    """The run's single output line, after checking exit 2 and that it says each of `expected`."""
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert all(part in lines[0] for part in expected), result.output
    return lines[0]


def with_metadata(change: Callable[[dict[str, Any]], object]) -> Callable[[dict[str, Any]], str]:
    def changed(metadata: dict[str, Any]) -> str:
        change(metadata)
        return json.dumps(metadata)

    return changed


def valid(metadata: dict[str, Any]) -> str:
    return json.dumps(metadata)


METADATA_FAULTS = [
    (with_metadata(lambda m: m["encoding"].update(params={"max_len": 0})), "orderlab metadata: encoding: "),
    (with_metadata(lambda m: m.update(seed="zero")), "orderlab metadata: seed: got 'zero'; expected a valid integer"),
    (with_metadata(lambda m: m.update(seed=2**40)), "orderlab metadata: seed: got 1099511627776; expected less than"),
    (lambda m: "{not json", "orderlab metadata: not valid JSON"),
    (lambda m: json.dumps("a string"), "orderlab metadata: a JSON str; expected orderlab's metadata (a JSON object)"),
    (with_metadata(lambda m: m.pop("seed")), "orderlab metadata: seed: missing"),
    (with_metadata(lambda m: m.pop("model")), "orderlab metadata: model: missing"),
    (with_metadata(lambda m: m["model"].update(d_model=-3)), "orderlab metadata: model.d_model: got -3"),
    (with_metadata(lambda m: m["model"].update(n_heads=3)), "d_model 8 is not divisible by n_heads 3"),
    (with_metadata(lambda m: m["model"].update(norm="rms")), "orderlab metadata: model.norm: got 'rms'"),
    (with_metadata(lambda m: m["model"].update(causal="yes")), "orderlab metadata: model.causal: got 'yes'"),
    (with_metadata(lambda m: m["train"].update(task="frist_word")), "train.task: got 'frist_word'"),
    (with_metadata(lambda m: m["encoding"].update(name="ropee")), "encoding.name: got 'ropee', an unknown encoding"),
    (with_metadata(lambda m: m["encoding"].update(name="os:system")), "encoding.name: got 'os:system', a plug-in"),
]  # fmt: skip


@pytest.mark.parametrize(("metadata", "expected"), METADATA_FAULTS)
def test_bad_metadata_is_one_line_naming_file_and_field(cli, trained, tmp_path, metadata, expected):
    copy = rewrite(trained, tmp_path, metadata(metadata_of(trained)))
    one_line(cli.invoke(app, ["validate", str(measuring_spec(tmp_path, copy))]), str(copy), expected)


def drop(name: str) -> Change:
    return lambda tensors: tensors.pop(name)


def put(name: str, tensor: torch.Tensor) -> Change:
    return lambda tensors: tensors.update({name: tensor})


TENSOR_FAULTS = [
    (drop("layers.0.w_q"), "tensors: 1 missing (layers.0.w_q)"),
    (put("layers.0.w_q", torch.zeros(8, 4, dtype=torch.float64)),
     "1 of the wrong shape (layers.0.w_q [8, 4] for [8, 8])"),
    (put("stray", torch.zeros(3)), "tensors: 1 unexpected (stray)"),
    (put("layers.1.w_q", torch.zeros(8, 8)), "1 unexpected (layers.1.w_q)"),
    (put("tables.0", torch.zeros(5, 8, dtype=torch.float64)), "tables.0 [5, 8] for [6, 8]"),
    (put("head", torch.zeros(8, 8, dtype=torch.int64)), "tensors.head.dtype: got 'I64'"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "expected"), TENSOR_FAULTS)
def test_missing_unexpected_or_misshapen_tensors_are_refused_at_validate(cli, trained, tmp_path, change, expected):
    copy = rewrite(trained, tmp_path, change=change)
    one_line(cli.invoke(app, ["validate", str(measuring_spec(tmp_path, copy))]), str(copy), expected)


def header_replaced(data: bytes, fill: bytes) -> bytes:
    """The file with its JSON header overwritten by `fill`, padded with spaces to the same length."""
    length = int.from_bytes(data[:8], "little")
    return data[:8] + fill.ljust(length) + data[8 + length :]


BYTE_FAULTS = [
    (lambda data: data[:-100], ["bytes of tensors where its header lists", "(truncated)"]),
    (lambda data: data + b"\0" * 16, ["16 bytes past the last tensor"]),
    (lambda data: data[:50], ["too few for its", "header (truncated)"]),
    (lambda data: header_replaced(data, b"\xff\xfe"), ["safetensors header: not UTF-8"]),
    (lambda data: header_replaced(data, b"[1, 2"), ["safetensors header: not valid JSON"]),
    (lambda data: header_replaced(data, b"[1, 2]"), ["safetensors header: a JSON list"]),
    (lambda data: header_replaced(data, b'{"head": {"dtype": "F64"}}'), ["tensors.head.shape: missing"]),
    (lambda data: b"PK\x03\x04 a zip, as torch.save writes", ["not a safetensors file"]),
    (lambda data: b"", ["not a safetensors file"]),
]  # fmt: skip


@pytest.mark.parametrize(("corrupt", "expected"), BYTE_FAULTS)
def test_truncated_corrupt_or_foreign_files_are_refused_at_validate(cli, trained, tmp_path, corrupt, expected):
    copy = tmp_path / "broken.safetensors"
    copy.write_bytes(corrupt(trained.read_bytes()))
    one_line(cli.invoke(app, ["validate", str(measuring_spec(tmp_path, copy))]), str(copy), *expected)


def test_a_fifo_checkpoint_is_refused_without_waiting_for_a_writer(cli, tmp_path):
    fifo = tmp_path / "checkpoint.safetensors"
    os.mkfifo(fifo)
    results: list[Result] = []
    spec = measuring_spec(tmp_path, fifo)
    validating = threading.Thread(target=lambda: results.append(cli.invoke(app, ["validate", str(spec)])), daemon=True)
    validating.start()
    validating.join(timeout=30)
    if validating.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # a writer comes and goes: the blocked reader returns
        pytest.fail("validate blocked on a FIFO named as the checkpoint")
    one_line(results[0], str(fifo), "not a regular file")


def test_the_spec_may_repeat_the_checkpoints_encoding_and_seed_but_not_contradict_them(cli, trained, tmp_path):
    same = measuring_spec(tmp_path, trained, "encodings: [{name: learned, max_len: 6}]\nseed: 0\n")
    assert cli.invoke(app, ["validate", str(same)]).exit_code == 0
    rope = measuring_spec(tmp_path, trained, "encodings: [rope]\n")
    one_line(cli.invoke(app, ["validate", str(rope)]), "encodings: [rope] differs from the checkpoint's encoding "
             "learned(max_len=6)", "expected [learned(max_len=6)] or no encodings")  # fmt: skip
    seed = measuring_spec(tmp_path, trained, "seed: 3\n")
    one_line(cli.invoke(app, ["validate", str(seed)]), "seed: 3 differs from the checkpoint's seed 0")


def test_a_checkpoint_relabelled_with_another_encoding_is_refused_before_anything_is_written(cli, trained, tmp_path):
    """A learned stack whose metadata says rope would be measured with rope and labelled rope: its table betrays it."""
    copy = rewrite(trained, tmp_path, valid(metadata_of(trained) | {"encoding": {"name": "rope", "params": {}}}))
    out = tmp_path / "out"
    result = cli.invoke(app, ["run", str(measuring_spec(tmp_path, copy)), "--out", str(out), "-q"])
    one_line(result, str(copy), "orderlab metadata: tables: 1 that rope does not draw (((6, 8), 1.0))")
    assert not (out / "measure").exists()


def test_non_finite_weights_are_refused_not_measured(cli, trained, tmp_path):
    copy = rewrite(trained, tmp_path, change=put("layers.0.w_v", torch.full((8, 8), float("nan"), dtype=torch.float64)))
    result = cli.invoke(app, ["run", str(measuring_spec(tmp_path, copy)), "--out", str(tmp_path / "out"), "-q"])
    one_line(result, str(copy), "tensors: 1 with NaN or infinite values (layers.0.w_v)")


def test_a_spec_whose_encodings_were_swapped_after_loading_is_refused_by_the_loader(trained, tmp_path):
    loaded = load_spec(measuring_spec(tmp_path, trained)).spec
    swapped = loaded.model_copy(update={"encodings": [loaded.encodings[0].model_copy(update={"name": "rope"})]})
    with pytest.raises(OrderlabError, match=r"trained with encoding learned\(max_len=6\), measured under \[rope"):
        load_checkpoint(trained, swapped)
    assert load_checkpoint(trained, loaded).choice == loaded.encodings[0]


def test_a_checkpoints_stack_is_patched_through_the_same_hook_channel(trained, tmp_path):
    import orderlab.api as ol

    patching = "patching: {pairs: [[[0, 1, 2], [1, 0, 2]]], slots: [[0, 1, 2], []]}\n"
    shares = ol.patch(measuring_spec(tmp_path, trained, patching)).shares
    assert shares["verdict"].tolist() == ["recovers all", "recovers none"]  # the last layer's every slot, or none


def test_compare_refuses_to_swap_a_checkpoints_encoding(cli, trained, tmp_path):
    spec = measuring_spec(tmp_path, trained)
    result = cli.invoke(app, ["compare", str(spec), "--encodings", "rope", "--out", str(tmp_path / "out")])
    one_line(result, "a checkpoint is measured under the encoding it was trained with")


# --- fuzzing the metadata slot: whatever JSON it holds, validate loads it or says why in one line -----------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10) | st.sampled_from(["rope", "learned", "first_word", "pre", "float32", "x.y:Z"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)  # fmt: skip
FIELDS = ["model", "encoding", "seed", "train", "tables"]


@st.composite
def metadata_texts(draw: st.DrawFn, original: dict[str, Any]) -> str:
    """Arbitrary JSON, or orderlab's own metadata with one field (or one field of a field) replaced or removed."""
    kind = draw(st.sampled_from(["anything", "field", "subfield", "drop"]))
    if kind == "anything":
        return json.dumps(draw(json_values))
    metadata = json.loads(json.dumps(original))
    field = draw(st.sampled_from(FIELDS))
    if kind == "drop":
        metadata.pop(field)
    elif kind == "subfield" and isinstance(metadata[field], dict):
        metadata[field][draw(st.sampled_from([*metadata[field], "extra"]))] = draw(json_values)
    else:
        metadata[field] = draw(json_values)
    return json.dumps(metadata)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_json_in_the_metadata_slot_loads_or_is_one_line(cli, trained, tmp_path, data):
    copy = rewrite(trained, tmp_path, data.draw(metadata_texts(metadata_of(trained))))
    spec = measuring_spec(tmp_path, copy)
    result = cli.invoke(app, ["validate", str(spec)])
    if result.exit_code == 2:
        one_line(result, str(copy))
        return
    assert result.exit_code == 0, result.output
    try:
        load_checkpoint(copy, load_spec(spec).spec)
    except OrderlabError as error:
        assert "\n" not in str(error) and str(copy) in str(error)
