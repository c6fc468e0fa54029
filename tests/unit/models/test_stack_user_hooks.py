"""run(spec, hooks=...) on the attention stack: a user's function at any of its hook points, through the same
channel its passes are read by (attention_stack.Requested), its rows labelled '+user_hook' and recorded in the
manifest, as a transformers model's are (tests/unit/models/test_user_hooks.py)."""

from __future__ import annotations

import pytest
import torch

import orderlab.api as ol
from orderlab.errors import OrderlabError

POINTS = ["1.attn_out", "1.mid", "1.mlp_out", "1.output", "2.input", "2.q", "2.output"]


def spec(causal: bool = False, ffn: bool = True) -> dict:
    model = {"d_model": 8, "n_heads": 2, "n_layers": 2, "causal": causal, "ffn": ffn}
    return {"name": "hooked", "model": model, "encodings": ["sinusoidal"],
            "inputs": [{"sentence": "dog bites man", "permutations": "all"}], "metrics": ["equivariance"]}  # fmt: skip


def doubled(tensor: torch.Tensor) -> torch.Tensor:
    return 2 * tensor


def test_a_function_at_a_stack_point_is_what_the_point_reads_and_what_follows_computes_from():
    plain = ol.activations(spec(), POINTS, orders="all")
    assert torch.allclose(plain["1.mid"], plain["1.output"] - plain["1.mlp_out"])  # pre-norm, residual: the stream
    for point in ("1.attn_out", "1.mid", "2.q"):
        hooked = ol.activations(spec(), POINTS, orders="all", hooks={point: doubled})
        assert torch.allclose(hooked[point], 2 * plain[point]), point
        assert not torch.allclose(hooked["2.output"], plain["2.output"]), point
        assert set(hooked.index.encoding) == {"sinusoidal+user_hook"}
    hooked = ol.activations(spec(), POINTS, orders="all", hooks={"1.attn_out": doubled})
    assert torch.allclose(hooked["1.mid"], plain["1.mid"] + plain["1.attn_out"])  # the residual adds what was written


def test_an_identity_function_changes_no_number_only_the_labels_and_a_causal_stack_runs_dense():
    plain = ol.run(spec(causal=True))
    hooked = ol.run(spec(causal=True), hooks={"1.mid": lambda tensor: tensor})
    renamed = hooked.metrics.replace({"encoding": {"sinusoidal+user_hook": "sinusoidal"}})
    assert renamed.drop(columns=["value"]).equals(plain.metrics.drop(columns=["value"]))
    assert ((renamed["value"] - plain.metrics["value"]).abs() < 1e-12).all()  # dense, not shared: round-off only
    (function,) = hooked.manifest["model"]["user_hooks"].values()
    assert set(hooked.manifest["model"]["user_hooks"]) == {"1.mid"} and function.startswith(__name__ + ".test_an_")
    assert plain.manifest["prefix_sharing"] == {"sinusoidal": "shared"}
    assert hooked.manifest["prefix_sharing"]["sinusoidal+user_hook"].startswith("dense: the user's hooks")


def test_a_point_this_stack_does_not_form_is_one_line_naming_those_it_does():
    with pytest.raises(OrderlabError, match=r"^hooks: '1.mlp_out' is no hook point; expected L.POINT with L in 1..2 "
                       r"and POINT one of input, normed, q, k, v, raw_scores, scores, pattern, heads, attn_out, "
                       r"output$"):  # fmt: skip
        ol.run(spec(ffn=False), hooks={"1.mlp_out": doubled})
    with pytest.raises(OrderlabError, match=r"^hooks: '3.output' is no hook point; expected L.POINT with L in 1..2"):
        ol.run(spec(), hooks={"3.output": doubled})
