"""The API against transformers: the random tiny families of tests/core, a bundled model, and the count of a
batch's packed passes."""
from __future__ import annotations

import pytest

from explorer.core import packed
from tests.core import conftest as core

# tests/core/conftest.py's fixtures the API's tests share: the random families and the pulled MiniLM folder
family, hf_model, minilm_folder = core.family, core.hf_model, core.minilm_folder


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


@pytest.fixture
def passes(monkeypatch) -> list[int]:
    """The number of prompts in each packed pass the batch takes."""
    seen: list[int] = []
    original = packed._packed_pass

    def counting(loaded, decoders, prompts, *rest):
        seen.append(len(prompts))
        return original(loaded, decoders, prompts, *rest)

    monkeypatch.setattr(packed, "_packed_pass", counting)
    return seen
