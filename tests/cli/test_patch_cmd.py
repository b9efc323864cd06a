"""`python -m explorer patch` and the intervention flags of `trace`, on a tiny llama folder."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from explorer.cli import main
from explorer.core import patching
from explorer.core.runtime import load_model
from tests.core.tiny_checkpoints import write_hf_folder

CLEAN, CORRUPT = "The cat sat on the", "The hat sat on the"          # 9 tokens each (byte-level BPE)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny-llama")
    write_hf_folder(path)
    return path


def _patch_json(folder, capsys, *extra) -> dict:
    assert main(["patch", "--model", str(folder), "--clean", CLEAN, "--corrupt", CORRUPT, "--target", " m",
                 "--against", "at", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("site", ["head", "resid"])
def test_patch_prints_the_map_the_engine_computes_from_an_uncached_run(folder, capsys, site):
    out = _patch_json(folder, capsys, "--site", site)
    loaded = load_model(str(folder))
    tokens = loaded.tokenizer
    target, against = tokens.encode(" m").ids[0], tokens.encode("at").ids[0]
    config = loaded.config
    expected_shape = (config.n_layers, config.n_heads if site == "head" else len(tokens.encode(CLEAN).ids))
    assert np.array(out["logit_diff"]).shape == expected_shape
    with torch.inference_mode():                                     # clean and corrupt: plain forwards
        for key, text in (("clean", CLEAN), ("corrupt", CORRUPT)):
            ids = tokens.encode(text).ids
            logits = loaded.model.logits(loaded.model(torch.as_tensor(ids), np.arange(len(ids))))[-1]
            assert out[key] == pytest.approx(float(logits[target] - logits[against]), abs=1e-5)
    direct = patching.patch_map(loaded, tokens.encode(CLEAN).ids, tokens.encode(CORRUPT).ids, target, against, site)
    np.testing.assert_allclose(out["logit_diff"], direct.values, atol=1e-6)


def test_unequal_prompts_and_a_target_of_several_tokens_exit_2(folder, capsys):
    assert main(["patch", "--model", str(folder), "--clean", CLEAN, "--corrupt", "The dog sat on the",
                 "--target", " m", "--against", "at"]) == 2
    assert "tokens" in capsys.readouterr().err
    assert main(["patch", "--model", str(folder), "--clean", CLEAN, "--corrupt", CORRUPT,
                 "--target", " Paris", "--against", "at"]) == 2
    err = capsys.readouterr().err
    assert "' Paris' is 4 tokens, not one" in err and len(err.strip().splitlines()) == 1


def test_trace_under_ablation_and_a_kernel_writes_the_intervened_run(folder, tmp_path):
    from explorer.core.decode import Decoder
    from explorer.core.intervention import HeadAblation, Intervention, Kernel, KernelChoice

    out = tmp_path / "trace.npz"
    assert main(["trace", "--model", str(folder), "--prompt", CLEAN, "--steps", "3", "--out", str(out),
                 "--ablate", "0.1", "--ablate", "1.3", "--kernel", "exp", "--temperature", "0.5",
                 "--kernel-layers", "1"]) == 0
    data = np.load(out, allow_pickle=False)
    loaded = load_model(str(folder))
    intervention = Intervention(kernels=(KernelChoice(Kernel("exp", 0.5), (1,)),),
                                ablations=(HeadAblation(0, 1), HeadAblation(1, 3)))
    ids = data["ids"]
    decoder = Decoder(loaded, intervention=intervention)
    decoder.prefill(ids)                                             # one uncached pass over the whole run
    np.testing.assert_allclose(data["logits"], np.stack([decoder.logits_at(p) for p in range(len(ids))]),
                               atol=1e-4, rtol=0)
    np.testing.assert_allclose(data["attn_1"], decoder.trace.attention(1), atol=1e-6)
    assert Intervention.from_json(json.loads(str(data["intervention"]))) == intervention
    plain = Decoder(loaded).prefill(ids)
    assert np.abs(plain.attention(1) - data["attn_1"]).max() > 1e-3


def test_trace_kernel_flags_are_checked(folder, tmp_path, capsys):
    out = str(tmp_path / "t.npz")
    base = ["trace", "--model", str(folder), "--prompt", CLEAN, "--steps", "1", "--out", out]
    assert main(base + ["--ablate", "1-2"]) == 2 and "LAYER.HEAD" in capsys.readouterr().err
    assert main(base + ["--ablate", "\u00b3.1"]) == 2 and "LAYER.HEAD" in capsys.readouterr().err
    assert main(base + ["--ablate", "7.0"]) == 2 and "layer 7 does not exist" in capsys.readouterr().err
    assert main(base + ["--kernel", "relu", "--temperature", "2"]) == 2
    assert "exp kernel" in capsys.readouterr().err
    assert main(base + ["--kernel-layers", "1"]) == 2 and "needs --kernel" in capsys.readouterr().err
    assert main(base + ["--kernel", "linear", "--kernel-layers", "0,1"]) == 0
