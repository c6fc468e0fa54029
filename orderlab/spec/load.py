"""`load_spec`, the one loader: YAML file -> validated Spec. Torch-free, so `validate` is fast.

Every problem surfaces as a SpecError `file:line: field.path: what, expected what`, all of a stage's in one
listing (SpecErrors): structure from pydantic (messages.py), then relations between fields (relations.py) for
every sweep combination (sweep.py). Loading checks the spec's contract only; what its run would cost on this
machine is the plan's question, above this layer: the commands that run or validate a spec pass the loaded spec to
plan/limits.validate_limits, which refuses what cannot fit, naming the field by the document kept here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orderlab.core.hook_points import HOOK_POINTS, LAYER_POINTS, LOGITS, unknown_point
from orderlab.core.registry import did_you_mean
from orderlab.core.userfiles import FileProblem, folder_name_problem
from orderlab.encodings import ENCODINGS, EncodingContext
from orderlab.errors import OrderlabError, SpecError, as_one
from orderlab.spec.checkpoint_meta import METADATA, CheckpointMeta, read_checkpoint
from orderlab.spec.messages import all_errors
from orderlab.spec.model_specs import HFModelSpec, ModelObject, family_of
from orderlab.spec.probe_file import with_probe_file
from orderlab.spec.relations import validate_relations
from orderlab.spec.schema import CheckpointModelSpec, EncodingChoice, ModelSpec, Spec, relative_to_spec
from orderlab.spec.sweep import validate_sweep
from orderlab.spec.yamlsource import LocatedDocument, parse_yaml, read_yaml


def load_spec(
    path: str | Path, given: ModelObject | None = None, user_hooks: Mapping[str, str] | None = None
) -> LoadedSpec:
    """Read, parse and validate a spec file; raise SpecError (one line a problem) on any problem. From Python only
    (orderlab.api.run): given, a model object the spec's model block then describes; user_hooks, the names of the
    user's functions at hook points (point -> name), recorded in the model block."""
    path = Path(path)
    return validated(read_yaml(path), path.stem, given, user_hooks)


# What errors about a spec given as a dict name instead of a file (`spec dict: model.n_heads: ...`), and the name
# of a dict spec without name: (its results folder).
DICT_SPEC, DICT_DEFAULT_NAME = "spec dict", "spec"


def load_spec_data(
    data: Mapping[str, Any], base: Path, given: ModelObject | None = None, user_hooks: Mapping[str, str] | None = None
) -> LoadedSpec:
    """A spec given as a dict (the Python API), validated as a file would be: relative paths in it resolve against
    `base`, errors name its field path (no file, no line), and its sha256 is that of its YAML."""
    try:
        text = yaml.safe_dump(dict(data), sort_keys=False, allow_unicode=True)
    except yaml.YAMLError as error:
        message = f"{str(error)[:200]}; expected plain values (str, numbers, lists, dicts)"
        raise SpecError(message, file=DICT_SPEC) from None
    document = parse_yaml(text, DICT_SPEC)
    document.lines.clear()  # lines of our own YAML text would point nowhere the user wrote
    document.origin = base / DICT_SPEC
    document.sha256 = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return validated(document, DICT_DEFAULT_NAME, given, user_hooks)


def validated(
    document: LocatedDocument,
    default_name: str,
    given: ModelObject | None = None,
    user_hooks: Mapping[str, str] | None = None,
) -> LoadedSpec:
    """The spec a parsed document holds, checked whole; without name: it is named `default_name` (the file's stem)."""
    if not isinstance(document.data, dict):
        raise document.error((), "expected a YAML mapping with keys like name, model, inputs")
    with_probe_file(document)
    try:
        spec = Spec.model_validate(document.data)
    except ValidationError as error:
        raise as_one(all_errors(error, document)) from None
    if not spec.name:
        problem = folder_name_problem(default_name)
        if problem:
            message = f"file name {default_name!r} cannot name the results folder: {problem}; set name: in the spec"
            raise document.error((), message)
        spec = spec.model_copy(update={"name": default_name})
    if isinstance(spec.model, CheckpointModelSpec):
        spec = from_checkpoint(spec, spec.model, document)
    if given is not None:
        spec = with_model_object(spec, given, document)
    if user_hooks:
        spec = with_user_hooks(spec, dict(user_hooks), document)
    validate_sweep(spec, document, validate_relations)
    return LoadedSpec(spec=spec, path=document.origin, sha256=document.sha256, document=document)


def from_checkpoint(spec: Spec, model: CheckpointModelSpec, doc: LocatedDocument) -> Spec:
    """The spec with the checkpoint's stack fields, encoding and seed filled in; a field that would contradict the
    checkpoint (the stack's shape, another encoding or seed, a train: block) is refused, naming both values."""
    for name in model.model_fields_set - {"kind", "path"}:
        raise doc.error(("model", name), "a checkpoint sets the stack's fields; expected only kind and path")
    if "train" in spec.model_fields_set:
        raise doc.error(("train",), "a checkpoint is measured as it was trained; expected no train: with it")
    file = relative_to_spec(doc.origin, model.path)
    try:
        meta = read_checkpoint(file).meta
        encoding = trained_encoding(file, meta, spec)
    except OrderlabError as error:
        raise doc.error(("model", "path"), str(error)) from None
    if "encodings" in spec.model_fields_set and spec.encodings != [encoding]:
        named = ", ".join(choice.label for choice in spec.encodings)
        raise doc.error(("encodings",), f"[{named}] differs from the checkpoint's encoding {encoding.label}, which it "
                        f"was trained with; expected [{encoding.label}] or no encodings")  # fmt: skip
    if "seed" in spec.model_fields_set and spec.seed != meta.seed:
        message = f"{spec.seed} differs from the checkpoint's seed {meta.seed}, which its word vectors need"
        raise doc.error(("seed",), f"{message}; expected {meta.seed} or no seed")
    filled = CheckpointModelSpec(kind="checkpoint", path=model.path, **meta.model.model_dump())
    return spec.model_copy(update={"model": filled, "encodings": [encoding], "seed": meta.seed})


GIVEN_FIELDS = {"kind", "family", "position_embeddings", "dtype"}  # what a spec may say of a model object


def with_model_object(spec: Spec, given: ModelObject, doc: LocatedDocument) -> Spec:
    """The spec with its model block describing a model object: `kind: hf` of the object's family (from its
    config.model_type), the spec's position ablations and dtype. A spec with no model block takes the object as it
    is; one that names a shape, a folder, another family or kind is refused: the object has its own."""
    family = family_of(given.config.get("model_type"), given.model_class.rsplit(".", 1)[-1])
    model = spec.model if "model" in spec.model_fields_set else HFModelSpec(kind="hf", family=family)
    if not isinstance(model, HFModelSpec):
        raise doc.error(("model", "kind"), f"{model.kind}: the model object is a transformers model; expected kind: "
                        "hf, or no model: block")  # fmt: skip
    for field in sorted(model.model_fields_set - GIVEN_FIELDS):
        raise doc.error(("model", field), "the model object has its own weights and shape; expected only "
                        f"{', '.join(sorted(GIVEN_FIELDS))} beside it")  # fmt: skip
    if "family" in model.model_fields_set and model.family != family:
        raise doc.error(("model", "family"), f"{model.family}: the model object is a {family} (config.model_type "
                        f"{given.config.get('model_type')!r}); expected {family} or no family")  # fmt: skip
    return spec.model_copy(update={"model": model.model_copy(update={"family": family, "given": given})})


def with_user_hooks(spec: Spec, user_hooks: dict[str, str], doc: LocatedDocument) -> Spec:
    """The spec with the user's hooks recorded in its model block: an attention stack's points or a transformers
    model's, each a name of the hook-point vocabulary (core/hook_points.py; the model checks its own layers and
    points once built: models/stack_adapter.py, models/hf/interventions.py)."""
    model = spec.model
    if not isinstance(model, HFModelSpec | ModelSpec) or isinstance(model, CheckpointModelSpec):
        raise doc.error(("model", "kind"), f"{model.kind}: a user's hooks run on the attention stack and transformers "
                        "models; expected kind: stack or hf, or model=")  # fmt: skip
    if spec.train is not None:
        raise doc.error(("train",), "a user's hooks run on the stack measured, never in training; expected no train: "
                        "with hooks=")  # fmt: skip
    for name in user_hooks:
        if isinstance(model, HFModelSpec):
            problem = unknown_point(name, None, LAYER_POINTS, (LOGITS,))
        else:
            problem = unknown_point(name, model.n_layers if isinstance(model.n_layers, int) else None, HOOK_POINTS)
        if problem is not None:
            raise OrderlabError(f"hooks: {problem}")
    return spec.model_copy(update={"model": model.model_copy(update={"user_hooks": user_hooks})})


def trained_encoding(file: Path, meta: CheckpointMeta, spec: Spec) -> EncodingChoice:
    """The checkpoint's encoding, valid for the stack it was trained on: a built-in, or a plug-in class only when the
    spec's own encodings: names it (a name in a file orderlab did not write must not choose a module to import)."""
    name, field = meta.encoding.name, f"{METADATA}: encoding.name"
    vouched = "encodings" in spec.model_fields_set and any(choice.name == name for choice in spec.encodings)
    if ":" in name and not vouched:
        raise FileProblem(file, f"got {name[:80]!r}, a plug-in class the spec does not name; expected a built-in "
                          f"encoding, or encodings: [{name[:80]}] in the spec to load it", field)  # fmt: skip
    if ":" not in name and name not in ENCODINGS:
        raise FileProblem(file, f"got {name[:80]!r}, an unknown encoding. {did_you_mean(name, ENCODINGS.names())}",
                          field)  # fmt: skip
    try:
        choice = EncodingChoice(name=name, params=meta.encoding.params)
    except ValidationError as error:
        message = error.errors()[0]["msg"].removeprefix("Value error, ")
        raise FileProblem(file, message, f"{METADATA}: encoding.params") from None
    m = meta.model
    context = EncodingContext(d_model=m.d_model, n_heads=m.n_heads, causal=m.causal, seed=meta.seed, dtype=m.dtype,
                              max_len=meta.train.longest)  # fmt: skip
    try:
        ENCODINGS.validate(name, context, choice.params)
    except (OrderlabError, ValueError) as error:
        raise FileProblem(file, str(error), f"{METADATA}: encoding") from None
    return choice


class LoadedSpec(BaseModel):
    """A validated spec with where it came from (for manifests and baselines)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)
    spec: Spec
    path: Path
    sha256: str
    document: LocatedDocument = Field(exclude=True, repr=False)  # the YAML's lines: later checks name them too


def with_changes(loaded: LoadedSpec, update: dict[str, object]) -> LoadedSpec:
    """The loaded spec with fields replaced (compare swaps its encodings in); errors about it still name the spec's
    file and fields. Its cost is not checked here: a spec that fits with its own encodings may not with others, so
    the caller checks the changed spec's limits (plan/limits.validate_limits)."""
    return loaded.model_copy(update={"spec": loaded.spec.model_copy(update=update)})
