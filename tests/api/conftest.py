"""The API against transformers: the random tiny families of tests/core, and a bundled model."""
from __future__ import annotations

import pytest

from tests.core.conftest import family, hf_model  # noqa: F401 (the random families' fixtures, shared)


@pytest.fixture
def model(hf_model, family):
    """An explorer.Model of the same weights (no tokenizer: prompts are ids)."""
    import explorer
    from explorer.core.runtime import from_tensors

    return explorer.Model(from_tensors(hf_model.config.to_dict(), hf_model.state_dict(), name=f"tiny-{family}"))


@pytest.fixture(scope="session")
def bundled():
    import explorer

    return explorer.load("shakespeare-gqa")
