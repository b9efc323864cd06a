"""A corpus of malformed model files (tests/malformed_corpus.py); each is refused with its own one-sentence message.

Nothing in a model file is ever executed: the pickle cases carry a payload that
would create a file when unpickled, and the test checks that the file never appears.
"""
from __future__ import annotations

import pickle
import resource
import time

import pytest

from explorer.core.errors import ModelLoadError
from explorer.core.loaders import open_checkpoint
from tests.malformed_corpus import CASE_IDS, CASES, MARKER, CreatesFile, good_folder

# Things a case's sentence must also name, beyond its own fragment.
ALSO_SAYS = {"header lies about offsets": ("model.norm.weight",),
             "config asks for remote code (auto_map)": ("modeling_evil.EvilForCausalLM",),
             **{f"pickle checkpoint {s} in a folder": (f"pytorch_model{s}", "safetensors")
                for s in (".bin", ".pt", ".pth", ".ckpt")}}


def _engine():
    from explorer.core import runtime

    return runtime.build_model


def refused(case, path) -> str:
    with pytest.raises(case.error) as caught:
        if case.at_build:
            checkpoint = open_checkpoint(path)  # the file itself is fine; the model it describes is not
            _engine()(checkpoint.hf_config, checkpoint.tensors, source=str(path))
        else:
            open_checkpoint(path)
    return str(caught.value)


SECONDS = 1.0          # "well under a second": refusing a tiny model's bad file takes ~0.1 s
MEGABYTES = 200        # on top of the process's high-water mark: nothing large was built or read


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024      # Linux: KiB


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_each_malformed_file_is_refused_with_its_own_sentence(tmp_path, case):
    path = case.build(good_folder(tmp_path / "model"), tmp_path)
    _engine()                                       # imported before the clock starts
    peak, started = peak_rss_mb(), time.perf_counter()
    message = refused(case, path)
    seconds, grown = time.perf_counter() - started, peak_rss_mb() - peak
    assert seconds < SECONDS and grown < MEGABYTES, f"{case.name}: {seconds:.2f} s, {grown:.0f} MB more at peak"
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


@pytest.mark.parametrize("name", ["config nested too deeply to parse", "config asks for a million layers",
                                  "config has more layers than the weights"])
def test_the_command_line_refuses_a_resource_bomb_in_one_line_with_exit_2(tmp_path, capsys, name):
    from explorer.cli import main

    case = next(c for c in CASES if c.name == name)
    path = case.build(good_folder(tmp_path / "model"), tmp_path)
    started = time.perf_counter()
    assert main(["trace", "--model", str(path), "--prompt", "hi", "--steps", "1",
                 "--out", str(tmp_path / "t.npz")]) == 2
    err = capsys.readouterr().err
    assert case.says in err and err.count("\n") == 1 and "Traceback" not in err
    assert time.perf_counter() - started < 5 * SECONDS


def test_a_config_asking_for_more_experts_than_the_weights_hold_is_refused_before_building():
    from tests.core.conftest import make_hf_model

    hf = make_hf_model("deepseek_v2")                        # 4 routed experts, stacked as transformers 5 does
    config = {**hf.config.to_dict(), "n_routed_experts": 5000}
    started = time.perf_counter()
    with pytest.raises(ModelLoadError, match="n_routed_experts = 5000, but the weights hold 4 experts"):
        _engine()(config, hf.state_dict(), source="tiny-deepseek")
    assert time.perf_counter() - started < SECONDS
