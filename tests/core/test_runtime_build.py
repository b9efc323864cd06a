"""build_model constructs the module on the meta device without running torch.nn.init: the checkpoint's
tensors replace every value, and a random init of a meta tensor imports torch._dynamo (seconds of the
app's cold start). The skip is a thread-local torch function mode, so init elsewhere is untouched."""
from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import torch

from explorer.core.building import SkipParameterInit
from explorer.core.runtime import build_model
from tests.core.tiny_checkpoints import LLAMA_CONFIG, llama_tensors

ROOT = Path(__file__).resolve().parents[2]


def test_random_init_functions_do_nothing_inside_the_mode_and_work_outside():
    weight = torch.full((4, 3), 7.0)
    with SkipParameterInit():
        for init in (torch.nn.init.normal_, torch.nn.init.uniform_, torch.nn.init.kaiming_uniform_,
                     torch.nn.init.kaiming_normal_, torch.nn.init.xavier_uniform_, torch.nn.init.xavier_normal_):
            assert init(weight) is weight
        assert torch.nn.Linear(3, 4).weight.shape == (4, 3)        # other torch functions still run
    assert torch.equal(weight, torch.full((4, 3), 7.0))
    torch.nn.init.zeros_(weight)
    assert torch.equal(weight, torch.zeros(4, 3))


def test_another_thread_still_initializes_while_one_thread_skips():
    inside, done = threading.Event(), threading.Event()
    seen = {}

    def other_thread() -> None:
        inside.wait(10)
        seen["weight"] = torch.nn.init.ones_(torch.zeros(2, 2))
        done.set()

    thread = threading.Thread(target=other_thread)
    thread.start()
    with SkipParameterInit():
        inside.set()
        done.wait(10)
    thread.join()
    assert torch.equal(seen["weight"], torch.ones(2, 2))


def test_the_built_model_holds_exactly_the_checkpoint_tensors():
    config = dict(LLAMA_CONFIG, vocab_size=40)
    tensors = llama_tensors(config, seed=3)
    model, _ = build_model(config, tensors, source="tiny")
    assert not any(p.is_meta for p in model.parameters())
    assert torch.equal(model.embed.weight, tensors["model.embed_tokens.weight"])
    assert torch.equal(model.norm.weight, tensors["model.norm.weight"])


def imports_torch_dynamo(before: str, action: str) -> bool:
    """Whether `action` (Python lines), run in a fresh process after `before` on a tiny Llama `config`, imports
    torch._dynamo."""
    script = ("import sys, torch\n"
              "from tests.core.tiny_checkpoints import LLAMA_CONFIG, llama_tensors\n"
              "config = dict(LLAMA_CONFIG, vocab_size=40)\n"
              f"{before}\n"
              "assert 'torch._dynamo' not in sys.modules, 'imported before'\n"
              f"{action}\n"
              "print('torch._dynamo' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip() == "True"


def test_building_a_model_does_not_import_torch_dynamo():
    assert not imports_torch_dynamo("from explorer.core.runtime import build_model",
                                    "build_model(config, llama_tensors(config))")


def test_a_what_if_conversion_does_not_import_torch_dynamo():
    """Every conversion builds its model empty as the load does (building.empty_modules): on the meta device alone,
    the MLA conversion's first random init imported torch._dynamo on the app's model thread, a hold of Python's
    lock that stopped the window 0.5-1 s under load (drive33, seen with faulthandler's dump of the threads)."""
    assert not imports_torch_dynamo(
        "from explorer.core import convert\n"
        "from explorer.core.runtime import from_tensors\n"
        "loaded = from_tensors(config, llama_tensors(config), name='tiny')",
        "for variant in ('mla-8', 'mqa', 'mha'):\n"
        "    converted = convert.convert(loaded, variant)\n"
        "    assert not any(p.is_meta for p in converted.loaded.model.parameters()), variant")


def test_the_bert_and_encoder_decoder_builds_draw_no_random_init():
    """Their modules are built under SkipParameterInit and then load the checkpoint: a random init drew from
    torch's generator for values thrown away (130-190 ms of each MiniLM open). Expectation: the generator's state,
    which any random init advances, is unchanged by the build."""
    import json

    from safetensors.torch import load_file

    from explorer.core import encdec, encoder
    from tests.core.test_encoder import tiny_bert

    bert = tiny_bert()
    folder = ROOT / "resources" / "models" / "translate-en-zh"
    translator = (json.loads((folder / "config.json").read_text()), load_file(folder / "model.safetensors"))
    for build, (config, tensors) in ((encoder.build, (bert.config.to_dict(), bert.state_dict())),
                                     (encdec.build, translator)):
        state = torch.get_rng_state()
        build(config, tensors, source="tiny")            # what it holds: test_encoder's and test_encdec's checks
        assert torch.equal(torch.get_rng_state(), state), f"{build.__module__} drew random numbers"
