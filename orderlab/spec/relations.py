"""Relations between the fields of a spec: what pydantic's per-field checks cannot see. Torch-free.

d_model vs n_heads, explicit matrices and vectors vs d_model and the words used, permutation rules
vs sentence lengths, each encoding's own constraints, and a pretrained backend's requirements (its
extra installed, its model folder, its corpus file). Each problem is one SpecError naming the field.
"""

from __future__ import annotations

from collections.abc import Callable

from orderlab.core import permutations as perms
from orderlab.core.corpustext import read_corpus
from orderlab.core.labelled_data import label_id
from orderlab.core.pair_relations import relation_problem
from orderlab.core.text import tokenize
from orderlab.encodings import ENCODINGS
from orderlab.errors import OrderlabError, SpecError, raise_all
from orderlab.families import FAMILIES
from orderlab.metrics import INVARIANCE_FAMILY, LM_LOGPROB_FAMILY, MINIMAL_PAIRS_FAMILY
from orderlab.spec.dataset_examples import examples_of, known_labels, training_examples
from orderlab.spec.extras import MissingExtraError, packaged_model_folder, require_extra
from orderlab.spec.model_specs import CorpusInputs, HFModelSpec, PretrainedModelSpec
from orderlab.spec.schema import (
    DatasetInputs,
    ExplicitEmbeddings,
    Spec,
    encoding_context,
    longest_sentence,
    relative_to_spec,
    uses_backend,
)
from orderlab.spec.train_block import TASKS
from orderlab.spec.yamlsource import FieldPath, LocatedDocument

STACK_ONLY_FIELDS = ("encodings", "embeddings")
SEEDED_FIELDS = ("d_model", "n_heads", "n_layers", "n_kv_heads", "d_ffn", "vocab_size")  # a seeded zoo model's shape
# The largest finite number of each dtype narrower than float64 (numpy's and torch's finfo; the spec layer has neither).
DTYPE_MAX = {"float32": 3.4028234663852886e38, "bfloat16": 3.3895313892515355e38, "float16": 65504.0}


def causal_families() -> str:
    """The causal LMs among the families, for a message."""
    return ", ".join(family.name for family in FAMILIES.values() if family.causal)


def validate_sentences(spec: Spec, doc: LocatedDocument, lowercase: bool) -> None:
    """There is something to measure, every input and probe has words, every permutation rule fits."""
    if not spec.sentences and not spec.probes:
        raise doc.error(("inputs",), "nothing to measure; expected at least one entry in inputs or probes")
    for index, item in enumerate(spec.sentences):
        words = tokenize(item.sentence, lowercase)
        if not words:
            raise doc.error(("inputs", index, "sentence"), "empty sentence; expected at least one word")
        try:
            perms.validate_rule(item.permutations, words)
        except ValueError as error:
            raise doc.error(("inputs", index, "permutations"), str(error)) from None
        many = perms.count(item.permutations, words)
        if spec.rows == "per_permutation" and many > perms.MAX_PERMUTATIONS_FOR_ROWS:
            raise doc.error(
                ("inputs", index, "permutations"),
                f"{many:,} permutations would write that many rows per layer and metric; expected "
                f"rows: summary beyond {perms.MAX_PERMUTATIONS_FOR_ROWS:,}",
            )
    for index, probe in enumerate(spec.probes):
        sides = [tokenize(sentence, lowercase) for sentence in probe.pair]
        for side, words in enumerate(sides):
            if not words:
                raise doc.error(("probes", index, side), "empty sentence; expected at least one word")
        problem = relation_problem(probe.relation, *sides)
        if problem:
            raise doc.error(("probes", index), problem)
    validate_shown(spec, doc, lowercase)


def validate_shown(spec: Spec, doc: LocatedDocument, lowercase: bool) -> None:
    """attention_maps names an input there is, and reorderings of its words."""
    shown = spec.attention_maps
    if shown.input >= len(spec.sentences) and (shown.input or shown.permutations is not None):
        raise doc.error(("attention_maps", "input"), f"the spec has {len(spec.sentences)} input sentence(s); "
                        f"expected 0..{len(spec.sentences) - 1}")  # fmt: skip
    if shown.permutations is not None:
        words = tokenize(spec.sentences[shown.input].sentence, lowercase)
        try:
            perms.validate_rule(shown.permutations, words)
        except ValueError as error:
            raise doc.error(("attention_maps", "permutations"), str(error)) from None


def check_matmul_precision(spec: Spec, doc: LocatedDocument) -> None:
    """tf32 is a float32 matmul mode: refused beside any other dtype."""
    if spec.model.matmul_precision == "tf32" and spec.model.dtype != "float32":
        message = f"tf32 is a float32 matmul mode, and model.dtype is {spec.model.dtype}"
        raise doc.error(
            ("model", "matmul_precision"), f"{message}; expected dtype float32, or matmul_precision highest"
        )


def validate_relations(spec: Spec, doc: LocatedDocument) -> None:
    """Raise SpecError (one line each) when fields of a concrete spec (one sweep combination) contradict each other:
    every independent check runs, so a spec's problems come in one listing (SpecErrors when several)."""
    problems = Problems(spec, doc)
    problems.attempt(check_matmul_precision)
    problems.attempt(check_patching)
    if uses_backend(spec):
        problems.attempt(refuse_training_backend)
        validate_backend(spec, doc, problems)
        problems.raise_all()
        return
    shape_fits = problems.attempt(_check_stack_shape)
    problems.attempt(lambda s, d: validate_sentences(s, d, s.embeddings.lowercase))
    if isinstance(spec.embeddings, ExplicitEmbeddings) and shape_fits:
        problems.attempt(_check_vectors)
    problems.attempt(_check_explicit_numbers_fit)
    if spec.train is not None and shape_fits:  # first: its lengths, not the inputs', may be what no encoding covers
        problems.attempt(validate_training)
    problems.attempt(validate_probe_sentences)
    if shape_fits and not problems.found:  # an encoding's range is judged on sentences and lengths that are right
        problems.attempt(_check_encodings)
    problems.raise_all()


class Problems:
    """The problems of one spec, gathered: each independent check runs, and all are raised at once."""

    def __init__(self, spec: Spec, doc: LocatedDocument) -> None:
        self.spec, self.doc = spec, doc
        self.found: list[SpecError] = []

    def attempt(self, check: Callable[[Spec, LocatedDocument], None]) -> bool:
        """Run one check; True if it passed (a check that others build on gates them)."""
        try:
            check(self.spec, self.doc)
        except SpecError as error:
            self.found.append(error)
            return False
        return True

    def raise_all(self) -> None:
        raise_all(self.found)


def _check_stack_shape(spec: Spec, doc: LocatedDocument) -> None:
    """The stack can measure what the spec asks: heads divide the width, explicit matrices are d_model square."""
    m = spec.stack
    for scored in (LM_LOGPROB_FAMILY, MINIMAL_PAIRS_FAMILY):
        if scored in spec.metrics or spec.token_logprobs:
            raise doc.error(("metrics",), f"{scored} needs a causal LM; expected model.kind hf with family "
                            f"{causal_families()}")  # fmt: skip
    if m.d_model % m.n_heads:
        raise doc.error(
            ("model", "d_model"), f"{m.d_model} is not divisible by n_heads={m.n_heads}; expected a multiple"
        )
    if m.weights is not None:
        for key in ("W_Q", "W_K", "W_V", "W_O"):
            matrix = getattr(m.weights, key)
            if matrix is not None and (len(matrix) != m.d_model or any(len(row) != m.d_model for row in matrix)):
                raise doc.error(("model", "weights", key), f"expected a {m.d_model} x {m.d_model} matrix")


def _check_encodings(spec: Spec, doc: LocatedDocument) -> None:
    """Every encoding can run on this stack at the longest sentence, with its parameters."""
    context = encoding_context(spec, longest_sentence(spec))
    problems = []
    for index, choice in enumerate(spec.encodings):
        try:
            ENCODINGS.validate(choice.name, context, choice.params)
        except (OrderlabError, ValueError) as error:
            problems.append(doc.error(("encodings", index), str(error)))
    raise_all(problems)


def check_patching(spec: Spec, doc: LocatedDocument) -> None:
    """patching: copies activations through a model's hook channel (every model's: measure/patch_targets.py), between
    orders of listed sentences: a corpus run would skip the block."""
    if spec.patching is None:
        return
    if isinstance(spec.inputs, CorpusInputs):
        raise doc.error(("patching",), "a corpus's lines are measured in batched passes, never patched; expected "
                        "inputs: - sentence: ...")  # fmt: skip


def refuse_training_backend(spec: Spec, doc: LocatedDocument) -> None:
    """train: trains the synthetic attention stack: a pretrained model or corpus inputs would silently skip it."""
    if spec.train is None:
        return
    if isinstance(spec.model, PretrainedModelSpec | HFModelSpec):
        message = f"model.kind {spec.model.kind} brings its own weights, so there is nothing to train"
    else:
        message = "corpus inputs are for pretrained models; the attention stack trains on its task's own sentences"
    raise doc.error(("train",), f"{message}; expected no train: in this spec")


def validate_training(spec: Spec, doc: LocatedDocument) -> None:
    """The task can be posed on every length asked for, on this stack, within every encoding's range."""
    train, m = spec.train, spec.stack
    assert train is not None
    task = TASKS[train.task]
    for name in ("train_lengths", "test_lengths"):
        lengths = getattr(train, name)
        if lengths is not None and lengths[0] < task.shortest:
            message = f"{list(lengths)}: task {train.task} needs sentences of at least {task.shortest} words"
            raise doc.error(("train", name), f"{message}; expected a shortest length >= {task.shortest}")
    if task.causal_only and not m.causal:
        raise doc.error(("train", "task"), f"{train.task} predicts the next word; expected model.causal: true")
    if m.weights is not None:
        raise doc.error(("model", "weights"), "explicit weights are not trained; expected seeded weights with train:")
    context = encoding_context(spec, train.longest)
    for index, choice in enumerate(spec.encodings):
        try:
            ENCODINGS.validate(choice.name, context, choice.params)
        except (OrderlabError, ValueError) as error:
            field = "test_lengths" if train.test_lengths else "train_lengths"
            raise doc.error(("train", field), f"{error} (encodings[{index}])") from None


def validate_probe_sentences(spec: Spec, doc: LocatedDocument) -> None:
    """decodability.from_task probes the train: task's sentences: there must be one, posable at the probe's length."""
    probe = spec.decodability
    if not probe.from_task:
        return
    if spec.train is None:
        raise doc.error(("decodability", "from_task"), "there is no train: task to take sentences from; expected false")
    shortest = TASKS[spec.train.task].shortest
    if probe.length < shortest:
        message = f"{probe.length}: task {spec.train.task} needs sentences of at least {shortest} words"
        raise doc.error(("decodability", "length"), f"{message}; expected a length >= {shortest}")


def _check_vectors(spec: Spec, doc: LocatedDocument) -> None:
    assert isinstance(spec.embeddings, ExplicitEmbeddings)
    vectors, d_model = spec.embeddings.vectors, spec.stack.d_model
    for word, vector in vectors.items():
        if len(vector) != d_model:
            raise doc.error(
                ("embeddings", "vectors", word), f"vector of length {len(vector)}; expected d_model={d_model} numbers"
            )
    places: list[tuple[FieldPath, str]] = [
        (("inputs", i, "sentence"), x.sentence) for i, x in enumerate(spec.sentences)
    ]
    places += [(("probes", i, side), s) for i, probe in enumerate(spec.probes) for side, s in enumerate(probe.pair)]
    for path, sentence in places:
        missing = [w for w in tokenize(sentence, spec.embeddings.lowercase) if w not in vectors]
        if missing:
            raise doc.error(path, f"no vector for {missing[0]!r}; expected it under embeddings.vectors")


def _check_explicit_numbers_fit(spec: Spec, doc: LocatedDocument) -> None:
    """Every explicit weight and vector entry fits the model's dtype: 1e300 in a float32 spec is inf before the
    first layer, and the run would only report NaN. (float64 holds every finite number YAML can give.)"""
    m = spec.stack
    largest = DTYPE_MAX.get(m.dtype)
    if largest is None:
        return
    entries: list[tuple[FieldPath, list[float]]] = []
    if m.weights is not None:
        entries += [(("model", "weights", key, i), row) for key in ("W_Q", "W_K", "W_V", "W_O")
                    for i, row in enumerate(getattr(m.weights, key) or [])]  # fmt: skip
    if isinstance(spec.embeddings, ExplicitEmbeddings):
        entries += [(("embeddings", "vectors", word), vector) for word, vector in spec.embeddings.vectors.items()]
    for path, numbers in entries:
        for index, number in enumerate(numbers):
            if abs(number) > largest:
                message = f"{number:g} overflows {m.dtype} (largest {largest:.4g}); expected numbers within the dtype"
                raise doc.error((*path, index), message)


def _check_zoo_model(spec: Spec, doc: LocatedDocument) -> None:
    """Its checkpoint folder or its seeded shape (a model object has its own), and its family's ablations: every
    problem, raised together."""
    model = spec.model
    assert isinstance(model, HFModelSpec)
    family = FAMILIES.get(model.family)
    found = []
    for field in ("n_kv_heads", "d_ffn"):
        if getattr(model, field) is not None and field not in family.seeded_fields:
            readers = ", ".join(name for name in FAMILIES.names() if field in FAMILIES.get(name).seeded_fields)
            found.append(doc.error(("model", field), f"sizes a seeded model of {readers}, and family is "
                                   f"{model.family}; expected it only with family {readers}"))  # fmt: skip
    if model.n_kv_heads is not None and model.n_heads % model.n_kv_heads:
        found.append(doc.error(("model", "n_kv_heads"), f"{model.n_kv_heads} does not divide n_heads={model.n_heads}; "
                               "expected a divisor"))  # fmt: skip
    if model.given is not None:
        pass  # a model object: its own weights and shape (plan/load.with_model_object refuses any other field)
    elif (folder := model.folder(doc.origin)) is not None:
        if not (folder / "config.json").is_file():
            field = "path" if model.name is None else "name"
            found.append(doc.error(("model", field), f"{folder} has no config.json; expected a Hugging Face model "
                                   "folder"))  # fmt: skip
        found += [doc.error(("model", field), "a checkpoint has its own shape; expected it only without path")
                  for field in SEEDED_FIELDS if field in model.model_fields_set]  # fmt: skip
    elif model.d_model % model.n_heads or model.d_model // model.n_heads % family.head_width_multiple:
        multiple = family.head_width_multiple
        need = (
            f"a multiple of {multiple * model.n_heads} ({family.head_width_reason})" if multiple > 1 else "a multiple"
        )
        found.append(doc.error(("model", "d_model"), f"{model.d_model} does not split into n_heads={model.n_heads} "
                               f"heads for {family.name}; expected {need}"))  # fmt: skip
    known = ", ".join(family.ablations)
    for index, ablation in enumerate(model.position_embeddings):
        if ablation not in family.ablations:
            message = f"{family.name} has no {ablation!r} ablation; expected one of {known}"
            found.append(doc.error(("model", "position_embeddings", index), message))
    raise_all(found)


def validate_backend(spec: Spec, doc: LocatedDocument, problems: Problems) -> None:
    """Gather into `problems` every reason a backend spec (a pretrained or zoo model, or corpus inputs) cannot run."""
    if not isinstance(spec.model, PretrainedModelSpec | HFModelSpec):
        if spec.train is None and isinstance(spec.inputs, DatasetInputs):
            message = ("dataset inputs need a sequence-classification model; expected model: {kind: hf, head: "
                       "classification}")  # fmt: skip
            problems.found.append(doc.error(("inputs",), message))
        elif spec.train is None:  # else refuse_training_backend said so
            message = "corpus inputs need a pretrained model; expected model.kind pretrained or hf"
            problems.found.append(doc.error(("inputs", "file"), message))
        return
    for field in STACK_ONLY_FIELDS:
        if field in spec.model_fields_set:
            problems.found.append(doc.error((field,), f"{field} apply to the synthetic attention stack; a pretrained "
                                  "model uses its own tokenizer and positions (expected model.position_embeddings for "
                                  "ablations)"))  # fmt: skip
    if problems.attempt(_check_backend_installed) and isinstance(spec.model, HFModelSpec):
        problems.attempt(_check_zoo_model)
    problems.attempt(_check_backend_metrics)
    if isinstance(spec.inputs, CorpusInputs):
        problems.attempt(_check_corpus_file)
        problems.attempt(_check_corpus_fields)
    elif isinstance(spec.inputs, DatasetInputs):
        problems.attempt(_check_classifier)
        problems.attempt(_check_dataset)
    else:
        problems.attempt(lambda s, d: validate_sentences(s, d, lowercase=False))  # the tokenizer sees words as written


def _check_backend_installed(spec: Spec, doc: LocatedDocument) -> None:
    """The packaged model's package, or the hf extra for the zoo."""
    try:
        if isinstance(spec.model, PretrainedModelSpec):
            packaged_model_folder(spec.model.name)
        else:
            require_extra("hf")
    except MissingExtraError as error:
        raise doc.error(("model", "kind"), str(error)) from None


def _check_backend_metrics(spec: Spec, doc: LocatedDocument) -> None:
    """The metrics the model can give: LM scores of a causal LM only, minimal pairs of probes."""
    assert isinstance(spec.model, PretrainedModelSpec | HFModelSpec)
    family = FAMILIES.get(spec.model.family)
    if spec.token_logprobs and LM_LOGPROB_FAMILY not in spec.metrics:
        raise doc.error(("token_logprobs",), f"a causal LM's token log-probabilities come with its {LM_LOGPROB_FAMILY} "
                        f"passes; expected {LM_LOGPROB_FAMILY} among metrics")  # fmt: skip
    for scored in (LM_LOGPROB_FAMILY, MINIMAL_PAIRS_FAMILY):
        if scored in spec.metrics and not family.causal:
            raise doc.error(("metrics",), f"{scored} needs a causal LM; {family.name} is an encoder "
                            f"(expected model.family {causal_families()})")  # fmt: skip
    if MINIMAL_PAIRS_FAMILY in spec.metrics and not spec.probes:
        raise doc.error(("probes",), f"{MINIMAL_PAIRS_FAMILY} scores probe pairs; expected probes: - [grammatical, "
                        "its minimal counterpart]")  # fmt: skip
    if MINIMAL_PAIRS_FAMILY in spec.metrics:  # an identical pair would be scored as a failure, never a tie
        same = [(index, probe.pair[0]) for index, probe in enumerate(spec.probes)
                if probe.pair[0].split() == probe.pair[1].split()]  # fmt: skip
        expected = "expected a sentence and its minimal counterpart, which differ"
        raise_all(
            [doc.error(("probes", index), f"{' '.join(text.split())!r} twice; {expected}") for index, text in same]
        )


def _check_classifier(spec: Spec, doc: LocatedDocument) -> None:
    """Dataset inputs are a classifier's: a zoo model with head: classification, or a model object (whose class
    the run checks), and nothing else to measure."""
    model = spec.model
    fitted = isinstance(model, PretrainedModelSpec) and model.head == "classification"
    if not fitted and (not isinstance(model, HFModelSpec) or (model.head != "classification" and model.given is None)):
        raise doc.error(("model",), "dataset inputs measure a classifier's predictions; expected model: {kind: hf, "
                        "head: classification}, {kind: pretrained, head: classification, train_head: {dataset, "
                        "labels}} (or a *ForSequenceClassification object: orderlab.api.run(spec, "
                        "model=...))")  # fmt: skip
    others = [name for name in spec.metrics if "metrics" in spec.model_fields_set]
    if others:
        raise doc.error(("metrics",), f"{', '.join(others)}: dataset inputs measure a classifier's predictions and the "
                        "published metrics over them; expected no metrics: list")  # fmt: skip
    for field in ("probes", "attention_maps", "decodability", "token_logprobs"):
        if field in spec.model_fields_set:
            raise doc.error((field,), f"dataset inputs measure a classifier's predictions; expected no {field}:")


def _check_dataset(spec: Spec, doc: LocatedDocument) -> None:
    """The examples can be read (a bad line is file:line), and each has the side the rule shuffles."""
    assert isinstance(spec.inputs, DatasetInputs)
    where: FieldPath = ("inputs", "dataset" if spec.inputs.dataset is not None else
                        "hf_dataset" if spec.inputs.hf_dataset is not None else "examples")  # fmt: skip
    try:
        examples = examples_of(spec.inputs, doc.origin)
    except OrderlabError as error:
        raise doc.error(where, str(error)) from None
    labels = known_labels(spec)
    if labels is not None:  # a seeded or fitted head: its labels are known now
        try:
            for example in examples:
                label_id(example, labels)
        except OrderlabError as error:
            raise doc.error(where, str(error)) from None
    if isinstance(spec.model, PretrainedModelSpec) and spec.model.train_head is not None:
        try:
            training_examples(spec.model, spec.inputs, doc.origin)
        except OrderlabError as error:
            raise doc.error(("model", "train_head", "dataset"), str(error)) from None
    if spec.inputs.permute != "text":
        single = next((e for e in examples if e.pair is None), None)
        if single is not None:
            raise doc.error(
                ("inputs", "permute"),
                f"{single.where}: no second sentence; permute: "
                f"{spec.inputs.permute} shuffles a pair's; expected pair: COLUMN or permute: text",
            )


def _check_corpus_file(spec: Spec, doc: LocatedDocument) -> None:
    assert isinstance(spec.inputs, CorpusInputs)
    try:
        read_corpus(relative_to_spec(doc.origin, spec.inputs.file))
    except OrderlabError as error:
        raise doc.error(("inputs", "file"), str(error)) from None


def _check_corpus_fields(spec: Spec, doc: LocatedDocument) -> None:
    """Corpus mode measures each line's pooled vector against its shuffles' (the invariance of sentence vectors,
    written as similarity_mean and similarity_cls) and a causal LM's log P of each (lm_logprob): a field asking for
    anything else would be ignored, so each is refused, all at once."""
    found = []
    measured_here = (INVARIANCE_FAMILY, LM_LOGPROB_FAMILY)
    others = [name for name in spec.metrics if name not in measured_here] if "metrics" in spec.model_fields_set else []
    if others:
        measured = ("corpus mode measures how far each line's pooled vector moves under its shuffles, and a causal "
                    "LM's log P of each line against its shuffles'")  # fmt: skip
        found.append(doc.error(("metrics",), f"{', '.join(others)}: {measured}; expected metrics: "
                               f"[{INVARIANCE_FAMILY}], [{LM_LOGPROB_FAMILY}], both, or none"))  # fmt: skip
    if "metrics" in spec.model_fields_set and not set(spec.metrics) & set(measured_here):
        found.append(doc.error(("metrics",), f"nothing corpus mode measures; expected {INVARIANCE_FAMILY} and/or "
                               f"{LM_LOGPROB_FAMILY}"))  # fmt: skip
    for field, what in (("probes", "probe pairs"), ("attention_maps", "attention maps"),
                        ("decodability", "position probe")):  # fmt: skip
        if field in spec.model_fields_set and (field != "probes" or spec.probes):
            found.append(doc.error((field,), f"corpus mode measures the file's lines against their shuffles, no "
                                   f"{what}; expected no {field}: (sentence inputs take it)"))  # fmt: skip
    raise_all(found)
