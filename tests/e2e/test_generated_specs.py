"""Valid specs never crash (issue 42): specs drawn over the combinations of the spec's features at tiny sizes (model
kinds and families, encodings, metrics, permutation rules, probes and relations, seeds, train tasks, dtypes,
sweeps). Every spec validate accepts runs to completion; every spec it refuses is one clear listing (exit 2, no
traceback). The default run draws a few; ORDERLAB_SPEC_EXAMPLES=200 (the slow profile) draws more."""

from __future__ import annotations

import os

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.encodings import ENCODINGS
from orderlab.families import FAMILIES
from orderlab.metrics import family_names
from orderlab.spec.extras import installed
from orderlab.train.tasks import TASKS

EXAMPLES = int(os.environ.get("ORDERLAB_SPEC_EXAMPLES", "12"))
WORDS = ["dog", "bites", "man", "the", "cat", "sat"]
RULES = ["identity", "reverse", "all", "swaps", "shifts", "prefixes"]
HF_FAMILIES = list(FAMILIES.names()) if installed("transformers") else []  # every zoo family, seeded


@st.composite
def sentences(draw, vocabulary: list[str]) -> str:
    return " ".join(draw(st.lists(st.sampled_from(vocabulary), min_size=2, max_size=4)))


@st.composite
def inputs(draw, vocabulary: list[str]) -> list[dict]:
    drawn = []
    for sentence in draw(st.lists(sentences(vocabulary), min_size=1, max_size=2)):
        n = len(sentence.split())
        rule = draw(st.one_of(st.sampled_from(RULES), st.builds(lambda k: {"random": k}, st.integers(1, 3)),
                              st.permutations(list(range(n))).map(lambda order: [list(order)])))  # fmt: skip
        drawn.append({"sentence": sentence, "permutations": rule})
    return drawn


@st.composite
def probes(draw, vocabulary: list[str]) -> list:
    pairs = []
    for sentence in draw(st.lists(sentences(vocabulary), max_size=2)):
        words = sentence.split()
        other = draw(st.permutations(words))
        if draw(st.booleans()):
            pairs.append([sentence, " ".join(other)])
        else:
            relation = draw(st.sampled_from(["different_words", "minimal_pair"]))
            pairs.append({"pair": [sentence, " ".join([*words[:-1], "dogs"])], "relation": relation})
    return pairs


@st.composite
def stack_model(draw) -> dict:
    model = {"d_model": 8, "n_heads": draw(st.sampled_from([1, 2])), "dtype": draw(st.sampled_from(["float32",
             "float64"]))}  # fmt: skip
    model["n_layers"] = draw(st.sampled_from([1, 2, [1, 2]]))
    for field in ("causal", "residual", "ffn"):
        if draw(st.booleans()):
            model[field] = draw(st.one_of(st.booleans(), st.just([False, True])))
    if draw(st.booleans()):
        model["norm"] = draw(st.sampled_from(["pre", "post", "none"]))
    return model


@st.composite
def hf_model(draw) -> dict:
    dtype = draw(st.sampled_from(["float32", "bfloat16", "float64"]))
    family = draw(st.sampled_from(HF_FAMILIES))
    model = {"kind": "hf", "family": family, "d_model": 16, "n_heads": 2, "n_layers": draw(st.sampled_from([1, 2])),
             "dtype": dtype}  # fmt: skip
    if draw(st.booleans()):  # the family's own ablations, now and then one it lacks (refused in one line)
        ablations = [*FAMILIES.get(family).ablations, *(["shuffled"] if draw(st.booleans()) else [])]
        chosen = draw(st.lists(st.sampled_from(ablations), min_size=1, max_size=2, unique=True))
        model["position_embeddings"] = chosen[0] if len(chosen) == 1 and draw(st.booleans()) else chosen
    return model


@st.composite
def specs(draw) -> dict:
    trained = draw(st.booleans()) and draw(st.booleans())  # a quarter of the specs train a stack
    hf = not trained and bool(HF_FAMILIES) and draw(st.booleans())
    vocabulary = [f"word{i}" for i in range(8)] if trained else WORDS
    spec: dict = {"name": "drawn", "model": draw(hf_model()) if hf else draw(stack_model())}
    spec["inputs"] = draw(inputs(vocabulary))
    if not hf:
        spec["encodings"] = draw(st.lists(st.sampled_from(list(ENCODINGS)), min_size=1, max_size=3, unique=True))
    if draw(st.booleans()):
        spec["probes"] = draw(probes(vocabulary))
    spec["metrics"] = draw(st.lists(st.sampled_from(family_names()), min_size=1, max_size=3, unique=True))
    if draw(st.booleans()):
        spec["seed"] = draw(st.sampled_from([1, [0, 1]]))
    if "decodability" in spec["metrics"]:
        spec["decodability"] = {"sentences": 16, "length": 4, "vocabulary": 8}
    if trained:
        n = draw(st.integers(3, 4))
        spec["train"] = {"task": draw(st.sampled_from(list(TASKS))), "train_lengths": [n, n], "vocabulary": 8,
                         "steps": 2, "batch": 4, "test_sentences": 8}  # fmt: skip
    if draw(st.booleans()):
        spec["rows"] = "summary"
    return spec


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture, HealthCheck.data_too_large])  # fmt: skip
@given(spec=specs())
@example(spec={"name": "drawn", "model": {"d_model": 8, "n_heads": 2, "n_layers": 1, "causal": True}, "seed": [0, 1],
               "encodings": ["none"], "inputs": [{"sentence": "word1 word2 word3", "permutations": "prefixes"}],
               "metrics": ["prefix_invariance"], "train": {"task": "next_token", "train_lengths": [3, 3],
               "vocabulary": 16, "steps": 2, "batch": 4, "test_sentences": 8}})  # an AssertionError before  # fmt: skip
@example(spec={"name": "drawn", "model": {"kind": "hf", "family": "gpt2", "d_model": 16, "n_heads": 2, "n_layers": 1},
               "inputs": [{"sentence": "dog man", "permutations": "reverse"},
                          {"sentence": "dog dog bites dog", "permutations": {"random": 1}}],
               "metrics": ["prefix_invariance", "equivariance"], "seed": [0, 1]}
         if HF_FAMILIES else {"name": "drawn"})  # a cell measured under one seed only: an AssertionError  # fmt: skip
@example(spec={"name": "drawn", "model": {"kind": "hf", "family": "gpt2", "d_model": 16, "n_heads": 2, "n_layers": 1},
               "inputs": [{"sentence": "dog dog", "permutations": "identity"}], "metrics": ["lm_logprob"],
               "rows": "summary"} if HF_FAMILIES else {"name": "drawn"})  # NaN means: exit 1  # fmt: skip
def test_a_spec_validate_accepts_runs_and_one_it_refuses_is_a_listing(spec, tmp_path_factory):
    folder = tmp_path_factory.mktemp("drawn")
    path = folder / "drawn.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    runner = CliRunner()
    checked = runner.invoke(app, ["validate", str(path)], env={"COLUMNS": "120"})
    assert checked.exception is None or isinstance(checked.exception, SystemExit), (spec, checked.output)
    assert checked.exit_code in (0, 2), (spec, checked.output)
    assert "Traceback" not in checked.output
    if checked.exit_code == 2:
        assert checked.output.startswith("error: "), (spec, checked.output)
        assert len(checked.output.splitlines()) <= 25, checked.output  # a bounded listing
        return
    ran = runner.invoke(app, ["run", str(path), "--out", str(folder / "out"), "-q"], env={"COLUMNS": "120"})
    assert ran.exception is None or isinstance(ran.exception, SystemExit), (spec, ran.output, ran.exception)
    assert ran.exit_code == 0, (spec, ran.output)
    assert (folder / "out" / "drawn" / "metrics.csv").is_file()
