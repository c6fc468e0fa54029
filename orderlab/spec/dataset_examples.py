"""The examples of a spec's dataset inputs, from wherever the spec says they are: a file (relative to the spec file),
the Hugging Face datasets cache, or typed into the spec; and the labelled file a packaged encoder's head is fitted on.
Torch-free: validate reads them to report a bad line."""

from __future__ import annotations

from pathlib import Path

from orderlab.core.labelled_data import Columns, Example, label_id, read_examples, read_hf_dataset
from orderlab.core.text import tokenize
from orderlab.errors import OrderlabError
from orderlab.spec.model_specs import HFModelSpec, PretrainedModelSpec
from orderlab.spec.schema import DatasetInputs, Spec


def examples_of(inputs: DatasetInputs, spec_file: Path) -> list[Example]:
    """Every example, in the order given; OrderlabError (one line) for a file or example that cannot be read."""
    columns = Columns(inputs.text, inputs.pair, inputs.label, inputs.group)
    if inputs.dataset is not None:
        return read_examples(spec_file.parent / inputs.dataset, columns)
    if inputs.hf_dataset is not None:
        return read_hf_dataset(inputs.hf_dataset, inputs.split, columns)
    assert inputs.examples is not None
    found = []
    for index, given in enumerate(inputs.examples):
        text, pair = tokenize(given.text), None if given.pair is None else tokenize(given.pair)
        if not text or pair == []:
            raise OrderlabError(f"inputs.examples[{index}]: an empty sentence; expected at least one word")
        found.append(Example(f"examples[{index}]", text, pair, given.label, given.group))
    return found


def known_labels(spec: Spec) -> list[str] | None:
    """The head's id2label when the spec alone gives it (a seeded head, a head orderlab fits); None when a checkpoint
    or model object holds it."""
    model = spec.model
    if isinstance(model, HFModelSpec) and model.seeded and model.head == "classification":
        return model.id2label
    if isinstance(model, PretrainedModelSpec) and model.train_head is not None:
        return model.train_head.labels
    return None


def training_examples(model: PretrainedModelSpec, inputs: DatasetInputs, spec_file: Path) -> list[tuple[Example, int]]:
    """The examples a head is fitted on, each with its gold label's id: the train_head file read with the inputs'
    columns; OrderlabError (one line, file:line) for a bad line, a missing label or one the head lacks."""
    assert model.train_head is not None
    columns = Columns(inputs.text, inputs.pair, inputs.label, None)
    found = []
    for example in read_examples(spec_file.parent / model.train_head.dataset, columns):
        gold = label_id(example, model.train_head.labels)
        if gold is None:
            raise OrderlabError(f"{example.where}: no label; expected every example a head is fitted on labelled")
        found.append((example, gold))
    return found
