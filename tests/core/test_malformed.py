"""A corpus of malformed model files (tests/malformed_corpus.py); each is refused with its own one-sentence message.

Nothing in a model file is ever executed: the pickle cases carry a payload that
would create a file when unpickled, and the test checks that the file never appears.
"""
from __future__ import annotations

import pickle

import pytest

from explorer.core.loaders import open_checkpoint
from tests.malformed_corpus import CASE_IDS, CASES, MARKER, CreatesFile, good_folder

# Things a case's sentence must also name, beyond its own fragment.
ALSO_SAYS = {"header lies about offsets": ("model.norm.weight",),
             "config asks for remote code (auto_map)": ("modeling_evil.EvilForCausalLM",),
             **{f"pickle checkpoint {s} in a folder": (f"pytorch_model{s}", "safetensors")
                for s in (".bin", ".pt", ".pth", ".ckpt")}}


def _engine():
    runtime = pytest.importorskip("explorer.core.runtime")
    return runtime.build_model


def refused(case, path) -> str:
    with pytest.raises(case.error) as caught:
        if case.at_build:
            checkpoint = open_checkpoint(path)  # the file itself is fine; the model it describes is not
            _engine()(checkpoint.hf_config, checkpoint.tensors, source=str(path))
        else:
            open_checkpoint(path)
    return str(caught.value)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_each_malformed_file_is_refused_with_its_own_sentence(tmp_path, case):
    path = case.build(good_folder(tmp_path / "model"), tmp_path)
    message = refused(case, path)
    assert case.says in message
    assert "\n" not in message and message.endswith((".", ")")), message
    for name in ALSO_SAYS.get(case.name, ()):
        assert name in message
    if case.at_build and case.names_file:
        assert str(path) in message
    assert not (tmp_path / MARKER).exists(), "a pickle payload ran"


def test_the_pickle_payload_would_run_if_it_were_unpickled(tmp_path):
    decoy = tmp_path / "decoy-created"
    pickle.loads(pickle.dumps(CreatesFile(decoy))).close()
    assert decoy.exists()
