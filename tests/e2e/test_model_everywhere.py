"""Every API function that builds a model takes model= and tokenizer= (issue 41): given an object it measures the
object, never a seeded default in its place; without one, a spec's documented default family stays."""

from __future__ import annotations

import pytest
import yaml

from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra [hf]"),
]

SPEC = {"name": "given", "model": {"kind": "hf"}, "inputs": [{"sentence": "dog bites man", "permutations": "all"}],
        "metrics": ["equivariance"]}  # fmt: skip


@pytest.fixture(scope="module")
def gpt2():
    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    backend = PretrainedBackend(Seeded(16, 2, 2, ("bites", "dog", "man"), 0), family="gpt2")
    return backend.model, backend.tokenizer


def test_trace_measures_the_object_not_a_seeded_default(gpt2):
    import orderlab.api as ol

    model, tokenizer = gpt2
    traced = ol.trace(SPEC, model=model, tokenizer=tokenizer, progress=False)
    assert set(traced.encoding) == {"given"} and traced.word.iloc[0] == tokenizer.bos_token  # GPT-2's BOS, no [CLS]
    held = ol.activations(SPEC, ["1.output"], orders=[[0, 1, 2]], model=model, tokenizer=tokenizer)
    output = traced[traced.quantity == "layer_output"].sort_values(["slot", "index"])["value"].to_numpy()
    assert output.tolist() == pytest.approx(held["1.output"][0].flatten().tolist(), abs=1e-6)
    default = ol.trace(SPEC, progress=False)  # no object: the documented default family, a seeded BERT
    assert default.word.iloc[0] == "[CLS]"


def test_check_reruns_the_spec_on_the_object_against_the_baseline_it_made(gpt2, tmp_path):
    import orderlab.api as ol

    model, tokenizer = gpt2
    path = tmp_path / "given.yaml"
    path.write_text(yaml.safe_dump(SPEC))
    ol.run(path, out=tmp_path / "results", model=model, tokenizer=tokenizer, progress=False)
    checked = ol.check([path], out=tmp_path / "results", model=model, tokenizer=tokenizer, progress=False)
    assert [outcome.status for outcome in checked.outcomes] == ["clean"] and checked.exit_code == 0
    alone = ol.check([path], out=tmp_path / "results", progress=False)  # the file alone cannot remake it
    assert [outcome.status for outcome in alone.outcomes] == ["error"]


def test_compare_runs_each_spec_on_the_object_under_its_conditions(gpt2, tmp_path):
    import orderlab.api as ol
    from orderlab.errors import OrderlabError

    model, tokenizer = gpt2
    path = tmp_path / "given.yaml"
    path.write_text(yaml.safe_dump({**SPEC, "model": {"kind": "hf", "position_embeddings": ["trained", "zero"]}}))
    table = ol.compare([path], model=model, tokenizer=tokenizer, metrics="equivariance", progress=False)
    assert {"given", "zero", "given verdict", "zero verdict"} <= set(table.columns)
    run = ol.run(path, model=model, tokenizer=tokenizer, progress=False).metrics
    worst = run[(run.encoding == "zero") & (run.metric == "equivariance")].groupby("layer")["value"].max()
    assert table.sort_values("layer")["zero"].tolist() == pytest.approx(worst.tolist())  # the object's own numbers
    with pytest.raises(OrderlabError, match=r"^encodings: 'rope' with model="):
        ol.compare([path], encodings="rope", model=model, tokenizer=tokenizer, progress=False)


@pytest.mark.parametrize("function", ["trace", "check", "compare", "patch"])
def test_a_tokenizer_without_its_model_is_refused_everywhere(gpt2, function, tmp_path):
    import orderlab.api as ol
    from orderlab.errors import OrderlabError

    path = tmp_path / "given.yaml"
    path.write_text(yaml.safe_dump(SPEC))
    target = [path] if function in ("check", "compare") else path
    with pytest.raises(OrderlabError, match=r"^tokenizer: given without model="):
        getattr(ol, function)(target, tokenizer=gpt2[1])
