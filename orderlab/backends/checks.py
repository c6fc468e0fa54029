"""Relations between fields of a spec that uses a pretrained backend or corpus inputs. Torch-free.

Called by spec._check_relations before its attention-stack checks, which do not apply here: a
pretrained model brings its own width, tokenizer and positions.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from orderlab.backends.corpustext import read_corpus
from orderlab.backends.extra import MissingExtraError, packaged_model_folder, require_extra
from orderlab.backends.specs import CorpusInputs, HFModelSpec, PretrainedModelSpec
from orderlab.errors import OrderlabError
from orderlab.metric_registry import ATTENTION_FAMILY

if TYPE_CHECKING:
    from orderlab.spec import Spec
    from orderlab.yamlsource import LocatedDocument

STACK_ONLY_FIELDS = ("encodings", "embeddings")


def uses_backend(spec: Spec) -> bool:
    """True when the spec runs a pretrained model or reads a corpus file (this package's job)."""
    return isinstance(spec.model, PretrainedModelSpec | HFModelSpec) or isinstance(spec.inputs, CorpusInputs)


def relative_to_spec(spec_file: str | Path, path: str) -> Path:
    return Path(spec_file).parent / path


def check_backend(spec: Spec, doc: LocatedDocument) -> None:
    """Raise SpecError (one line) for a backend spec that cannot run."""
    if not isinstance(spec.model, PretrainedModelSpec | HFModelSpec):
        raise doc.error(
            ("inputs", "file"), "corpus inputs need a pretrained model; expected model.kind pretrained or hf"
        )
    for field in STACK_ONLY_FIELDS:
        if field in spec.model_fields_set:
            raise doc.error(
                (field,),
                f"{field} apply to the synthetic attention stack; a pretrained model uses its own tokenizer and "
                "positions (expected model.position_embeddings for ablations)",
            )
    corpus_mode = isinstance(spec.inputs, CorpusInputs)
    if corpus_mode and "metrics" in spec.model_fields_set and ATTENTION_FAMILY in spec.metrics:
        raise doc.error(("metrics",), f"corpus mode measures pooled sentences; expected no {ATTENTION_FAMILY!r} metric")
    try:
        if isinstance(spec.model, PretrainedModelSpec):
            packaged_model_folder(spec.model.name)
        else:
            require_extra("hf")
    except MissingExtraError as error:
        raise doc.error(("model", "kind"), str(error)) from None
    if isinstance(spec.model, HFModelSpec):
        folder = relative_to_spec(doc.file, spec.model.path)
        if not (folder / "config.json").is_file():
            raise doc.error(("model", "path"), f"{folder} has no config.json; expected a Hugging Face model folder")
    if isinstance(spec.inputs, CorpusInputs):
        try:
            read_corpus(relative_to_spec(doc.file, spec.inputs.file))
        except OrderlabError as error:
            raise doc.error(("inputs", "file"), str(error)) from None
        return
    from orderlab.spec import check_sentences  # spec.py imports this module

    check_sentences(spec, doc, lowercase=False)  # the model's tokenizer sees the words as written
