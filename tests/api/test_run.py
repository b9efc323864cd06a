"""A Run's moves, its files and its errors, on the bundled GQA model."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import explorer

PROMPT = "To be, or not to be"


def test_ids_tokens_and_kv_bytes(bundled):
    run = bundled.run(PROMPT, steps=3)
    n_prompt = len(bundled.loaded.tokenizer.encode(PROMPT).ids)
    assert len(run.ids) == n_prompt + 3 and run.trace.n_steps == 4
    assert run.tokens == [bundled.loaded.tokenizer.display(int(i)) for i in run.ids]
    info = bundled.info
    per_token = info.n_layers * 2 * info.n_kv_heads * info.d_qk * 4       # K and V, float32
    np.testing.assert_array_equal(run.kv_bytes, per_token * np.arange(1, len(run.ids) + 1))


def test_step_back_and_force(bundled):
    run = bundled.run(PROMPT, steps=1)
    before = run.ids.copy()
    run.step()
    assert run.ids[:-1].tolist() == before.tolist()
    assert run.ids[-1] == int(np.argmax(run.logits[-2]))                    # greedy: argmax one position back
    run.back()
    assert run.ids.tolist() == before.tolist()
    run.force(7).step()
    assert run.ids[-1] == 7 and run.trace.steps[-2].forced
    assert run.logits.shape == (len(run.ids), info_vocab(bundled))


def info_vocab(model) -> int:
    return model.info.vocab_size


def test_sampling_is_seeded(bundled):
    sampling = explorer.Sampling(temperature=1.5, top_k=50, seed=3)
    first = bundled.run(PROMPT, steps=6, sampling=sampling).ids
    again = bundled.run(PROMPT, steps=6, sampling=sampling).ids
    greedy = bundled.run(PROMPT, steps=6).ids
    np.testing.assert_array_equal(first, again)
    assert first.tolist() != greedy.tolist()


def test_save_writes_the_trace_commands_arrays(bundled, tmp_path):
    run = bundled.run(PROMPT, steps=2)
    data = np.load(run.save(tmp_path / "run.npz"), allow_pickle=False)
    t, info = len(run.ids), bundled.info
    assert set(data.files) == {"ids", "tokens", "logits", "kv_bytes"} | {f"attn_{l}" for l in range(info.n_layers)}
    np.testing.assert_array_equal(data["ids"], run.ids)
    assert data["tokens"].tolist() == run.tokens
    assert data["logits"].dtype == np.float32 and data["logits"].shape == (t, info.vocab_size)
    for layer in range(info.n_layers):
        attn = data[f"attn_{layer}"]
        assert attn.shape == (info.n_heads, t, t)
        np.testing.assert_array_equal(attn[2], run.attention(layer, 2))
        np.testing.assert_allclose(attn.sum(-1), 1.0, atol=1e-5)


def test_the_session_file_replays_to_the_same_trace(bundled, tmp_path):
    from explorer.views.session_state import load

    run = bundled.run(PROMPT, steps=2).force(11).step()
    state = load(run.save_session(tmp_path / "run.json"))
    assert json.loads((tmp_path / "run.json").read_text())["format"] == "transformer-explorer-session"
    assert state.model == "shakespeare-gqa" and state.prompt == PROMPT and state.steps == run.trace.n_steps
    assert state.forced == ((2, 11),)
    replay = bundled.run(list(state.prompt_ids), steps=1)     # what the app does: prefill, force, step
    replay.step().force(11).step()
    np.testing.assert_array_equal(replay.ids, run.ids)


@pytest.mark.parametrize("save, name", [(lambda run, path: run.save_session(path), "out.json"),
                                        (lambda run, path: run.save(path), "out.npz"),
                                        (lambda run, path: run.show(0, 0).save(path), "out.png")],
                         ids=["session", "trace", "figure"])
def test_every_save_into_a_missing_folder_is_refused_and_makes_none(bundled, tmp_path, save, name):
    """As `trace --out` does; save_session made the folder (boundary27)."""
    run = bundled.run(PROMPT, steps=1)
    with pytest.raises(explorer.ExplorerError, match=rf"{name.replace('.', '[.]')}: its folder does not exist[.]$"):
        save(run, tmp_path / "missing" / name)
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("call, words", [
    (lambda m: m.run(PROMPT, steps=-1), "steps=-1"),
    (lambda m: m.run(PROMPT, steps=10_000), "context of 256"),
    (lambda m: m.run(""), "gives no tokens"),
    (lambda m: m.run(PROMPT).attention(9, 0), "layer 9"),
    (lambda m: m.run(PROMPT).attention(0, 6), "head 6"),
    (lambda m: m.run(PROMPT).attention(0, 0, step=3), "step 3"),
    (lambda m: m.run(PROMPT).attention(0, 0, kind="cross"), "'cross'"),
    (lambda m: m.run(PROMPT, kernel_layers=[1]), "kernel_layers"),
    (lambda m: m.run(PROMPT).force(99_999), "99999"),
    (lambda m: m.run(PROMPT, ablate=[(0, 1)]).save_session("never.json"), "run.save"),
])
def test_bad_input_raises_one_sentence(bundled, call, words):
    with pytest.raises(explorer.ExplorerError) as caught:
        call(bundled)
    message = str(caught.value)
    assert words in message and "\n" not in message


def test_a_missing_model_is_a_model_load_error(tmp_path):
    with pytest.raises(explorer.ModelLoadError, match="no-such-model"):
        explorer.load(tmp_path / "no-such-model")


def test_kv_table_rows_follow_the_formula(tmp_path):
    """bytes per token = layers · 2 · N_KV · d_h · bytes(dtype); SmolLM2's shape: 30 layers, 9/3 heads, d_h 64."""
    config = dict(model_type="llama", num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                  hidden_size=576, head_dim=64, max_position_embeddings=8192, vocab_size=49152)
    (tmp_path / "config.json").write_text(json.dumps(config))
    rows = {row["variant"]: row for row in explorer.kv_table(tmp_path, tokens=1000, dtype="bfloat16")}
    assert rows["mha"]["bytes_per_token"] == 30 * 2 * 9 * 64 * 2
    assert rows["gqa-3"]["native"] and rows["gqa-3"]["bytes_per_token"] == 30 * 2 * 3 * 64 * 2
    assert rows["mqa"]["bytes_total"] == 1000 * 30 * 2 * 1 * 64 * 2


def test_import_explorer_imports_neither_torch_nor_qt():
    code = ("import sys, explorer\n"
            "light = not any(m in sys.modules for m in ('torch', 'PySide6', 'numpy'))\n"
            "run = explorer.load('shakespeare-mqa').run('To be', steps=1)\n"
            "run.show(0, 0)._repr_png_(); run.show_grid()._repr_svg_()\n"
            "print(light, 'torch' in sys.modules, 'PySide6' in sys.modules, 'pyqtgraph' in sys.modules,"
            " 'matplotlib.pyplot' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.split() == ["True", "True", "False", "False", "False"]


def test_an_encoder_decoder_has_three_kinds_of_attention():
    """The bundled translator: cross-attention is target rows × source columns, each row a distribution."""
    run = explorer.load("translate-en-zh").run("November 23, 1987", steps=3)
    n_target, n_source = len(run.ids), len(run.trace.encoder.token_ids)
    cross = run.attention(1, 2, kind="cross")
    assert cross.shape == (n_target, n_source)
    np.testing.assert_allclose(cross.sum(-1), 1.0, atol=1e-5)
    encoder = run.attention(0, 1, kind="encoder")
    assert encoder.shape == (n_source, n_source) and np.all(encoder > 0)        # the full mask
    assert np.all(np.triu(run.attention(0, 1), k=1) == 0)                         # the decoder's causal mask
    arrays = run.arrays()
    np.testing.assert_array_equal(arrays["cross_attn_1"][2], cross)
    assert arrays["source_ids"].tolist() == run.trace.encoder.token_ids.tolist()


def test_a_bfloat16_run_hands_back_float32_arrays_and_bad_settings_are_refused():
    run = explorer.load("shakespeare-mha", dtype="bfloat16").run("To be", steps=1)
    assert run.model.info.dtype == "bfloat16"
    assert run.logits.dtype == np.float32 and run.attention(0, 0).dtype == np.float32
    per_token = run.model.info.n_layers * 2 * run.model.info.n_kv_heads * run.model.info.d_qk * 2   # bf16: 2 B
    assert run.kv_bytes[0] == per_token
    with pytest.raises(explorer.ModelLoadError, match="'int4' is not one of"):
        explorer.load("shakespeare-mha", dtype="int4")
    with pytest.raises(explorer.ModelLoadError, match="'tpu' is not a device"):
        explorer.load("shakespeare-mha", device="tpu")
