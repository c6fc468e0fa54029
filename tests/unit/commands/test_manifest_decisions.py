"""manifest.json reports the decisions a run made when its measurement was set up; it does not decide again."""

from __future__ import annotations

import dataclasses

import pytest

from orderlab.commands.run import run_manifest
from orderlab.measure.sweep_measure import SweepMeasurement
from orderlab.models.devices import CPU
from orderlab.plan.decisions import Decisions
from orderlab.plan.limits import validate_limits
from orderlab.spec.load import load_spec

CAUSAL = "name: c\nmodel: {causal: true}\nencodings: [rope, sinusoidal]\ninputs: [{sentence: a b c d}]\n"


@pytest.mark.parametrize("share", [True, False])
def test_the_manifest_says_how_the_run_decided_to_run_its_causal_passes(write_spec, share):
    loaded = validate_limits(load_spec(write_spec(CAUSAL)))
    run = SweepMeasurement(loaded.spec, spec_file=loaded.path)
    assert run.decisions == Decisions(share_prefixes=True, compile=False)  # the CPU always shares
    run.decisions = dataclasses.replace(run.decisions, share_prefixes=share)  # as a card's pricing would decide
    sharing = run_manifest(loaded, run, CPU, rows=0, maps=False)["prefix_sharing"]
    assert set(sharing) == {"rope", "sinusoidal"}
    assert all(note.startswith("shared" if share else "dense") for note in sharing.values()), sharing


def test_a_walk_turned_off_by_its_setting_says_so_in_the_manifest(write_spec, monkeypatch):
    monkeypatch.setenv("ORDERLAB_PREFIX_WALK", "never")
    loaded = validate_limits(load_spec(write_spec(CAUSAL)))
    run = SweepMeasurement(loaded.spec, spec_file=loaded.path)
    assert run.decisions == Decisions(share_prefixes=False, compile=False, walk_forced=True)
    sharing = run_manifest(loaded, run, CPU, rows=0, maps=False)["prefix_sharing"]
    assert set(sharing.values()) == {"dense: ORDERLAB_PREFIX_WALK=never"}
