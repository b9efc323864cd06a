"""The app with an encoder-decoder (the bundled translate-en-zh) and with an encoder-only model.

Panels are wrapped around a real Session fed the traces of the real translator; the
window tests open the models through the real worker, as a person would.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from explorer.app.panels import AttentionPanel, KVCachePanel, MaskPanel, QKVPanel
from explorer.app.panels.attention_header import attention_formula
from explorer.app.panels.mask import MASKED, NEW_ROW
from explorer.app.state.session import Session
from explorer.views import trace_views
from tests.app.csv_maps import read_map
from tests.app.shared_window import make, settle

TRANSLATOR = Path(__file__).resolve().parents[2] / "resources" / "models" / "translate-en-zh"
SOURCE = "twelve thousand three hundred"
TARGET = ["<s>", "一", "万", "二", "千", "三", "百"]


@pytest.fixture(scope="module")
def translation():
    """The decoder after translating SOURCE greedily up to 百, and its trace after each step."""
    from explorer.core.drivers import make_decoder
    from explorer.core.runtime import load_model

    loaded = load_model(TRANSLATOR)
    decoder = make_decoder(loaded)
    traces = [decoder.prefill(loaded.tokenizer.encode(SOURCE).ids)]
    while len(traces[-1].token_text) < len(TARGET):
        traces.append(decoder.step())
    return decoder, traces


@pytest.fixture
def session(qtbot):
    return Session()


def test_cross_attention_map_is_target_rows_by_source_columns_and_rows_sum_to_one(qtbot, session, translation):
    _, traces = translation
    trace = traces[-1]
    attention = make(qtbot, session, AttentionPanel)
    session.set_trace(trace)
    session.select(attention="cross", layer=2, head=1)
    assert attention.kind_box.isVisible() and attention.kind_box.kinds == ("encoder", "self", "cross")
    source = trace.encoder.token_text
    assert source == ("<2zh>", "twelve", "␣thousand", "␣three", "␣hundred")   # the task token was added
    assert attention.matrix.shape == (len(TARGET), len(source))                # T_target × T_source
    assert np.allclose(attention.matrix.sum(axis=1), 1.0, atol=1e-4)
    assert list(trace.token_text) == TARGET
    assert attention.large.axes["left"]._labels == TARGET
    assert attention.large.axes["top"]._labels == ["<2zh>", "twelve", "␣thousand", "␣three", "␣hundred"]
    header = attention.header.text()
    assert "X<sup>Q</sup>" in header and "X<sup>K</sup> = X<sup>V</sup> = C" in header
    # token counts are T_Q and T_KV: N_Q and N_KV count heads everywhere else (drive31 read both in one window)
    assert f"T<sub>Q</sub> = {len(TARGET)} target tokens ≠ T<sub>KV</sub> = {len(source)} source tokens" in header
    assert f"N<sub>Q</sub> = {trace.model.n_heads}," in header
    first_step = attention_formula(trace, "cross", "weights", 2, 1, (1, len(source)))      # the decoder's start
    assert f"T_Q = 1 target token ≠ T_{{KV}} = {len(source)} source tokens" in first_step, first_step
    # The decoder's self-attention is causal over the target, the encoder's full over the source.
    session.select(attention="self")
    assert attention.matrix.shape == (len(TARGET), len(TARGET))
    assert np.isnan(attention.matrix[0, 1:]).all() and "decoder self-attention" in attention.formula
    session.select(attention="encoder")
    assert attention.matrix.shape == (len(source), len(source)) and np.isfinite(attention.matrix).all()
    assert np.allclose(attention.matrix, trace.encoder.layers[2].attn.weights[1], atol=1e-6)
    assert attention.large.axes["left"]._labels == attention.large.axes["top"]._labels


def test_mask_panel_shows_the_full_encoder_square_the_growing_causal_triangle_and_the_cross_rectangle(
        qtbot, session, translation):
    _, traces = translation
    mask = make(qtbot, session, MaskPanel)
    session.set_trace(traces[-1])
    n_target, n_source = len(TARGET), len(traces[-1].encoder.token_ids)
    session.select(attention="cross")
    assert mask.mask.shape == (n_target, n_source)
    assert not (mask.mask == MASKED).any()                                      # nothing hidden
    assert (mask.mask[-1] == NEW_ROW).all() and not (mask.mask[:-1] == NEW_ROW).any()  # this step's row
    assert mask.heatmap.axes["top"]._labels[1] == "twelve" and "nothing masked" in mask.formula
    session.select(step=2)                                                      # replay: the rectangle grows
    assert mask.mask.shape == (3, n_source)
    session.select(step=None, attention="self")
    assert mask.mask.shape == (n_target, n_target)
    assert ((mask.mask != MASKED) == np.tril(np.ones((n_target, n_target), bool))).all()
    session.select(attention="encoder")
    assert mask.mask.shape == (n_source, n_source) and not (mask.mask == MASKED).any()
    assert "full (bidirectional)" in mask.formula and "encoder" in mask.formula


def test_kv_panel_shows_the_cross_kv_fixed_while_the_self_attention_cache_grows(qtbot, session, translation):
    decoder, traces = translation
    kv = make(qtbot, session, KVCachePanel)
    session.set_trace(traces[2])
    cross_then, in_use_then = kv.cross_bytes.copy(), kv.total_in_use
    session.set_trace(traces[-1])
    assert list(kv.cross_bytes) == decoder.kv_cache.cross_bytes() == list(cross_then)   # does not grow
    info = traces[-1].model
    assert kv.cross_bytes[0] == info.n_kv_heads * 5 * (info.d_qk + info.d_v) * 4          # N_KV · S · (d_QK + d_V)
    assert kv.total_in_use > in_use_then                                                   # the self cache grows
    assert kv.total_in_use == sum(decoder.kv_cache.bytes_in_use())
    assert "cross-attention K/V" in kv.summary.text() and "fixed" in kv.formula


def test_qkv_panel_shows_target_queries_against_source_keys_and_values(qtbot, session, translation):
    _, traces = translation
    trace = traces[-1]
    qkv = make(qtbot, session, QKVPanel)
    session.set_trace(trace)
    session.select(attention="cross", layer=1, head=3)
    d = trace.model.d_qk
    assert {name: m.shape for name, m in qkv.matrices.items()} == {"Q_3": (7, d), "K_3": (5, d), "V_3": (5, d)}
    assert np.array_equal(qkv.matrices["K_3"], trace.steps[0].layers[1].cross.k[3])
    assert qkv.row_text["K_3"] == trace.encoder.token_text and qkv.row_text["Q_3"] == trace.token_text
    assert "X<sup>Q</sup>" in qkv.header.text() and "C W" in qkv.formula
    session.select(attention="encoder")
    assert qkv.matrices["Q_3"].shape == (5, d)
    assert np.array_equal(qkv.matrices["Q_3"], trace.encoder.layers[1].attn.q[3])


def test_export_writes_the_cross_map_as_npy_csv_and_png(qtbot, tmp_path, translation):
    from explorer.drawing import export

    trace = translation[1][-1]
    view = trace_views.view(trace, "cross")
    export.export_attention(view.trace, tmp_path / "cross.npy", 2, 0, cross=view.cross)
    saved = np.load(tmp_path / "cross.npy")
    assert saved.shape == (7, 5) and np.allclose(saved, trace.attention(2, cross=True)[0])
    export.export_attention(view.trace, tmp_path / "cross.csv", 2, "all", cross=view.cross)
    assert read_map(tmp_path / "cross.csv")[0].shape == (4 * 7, 5)
    export.export_attention(view.trace, tmp_path / "cross.png", 2, 0, cross=True, size=(400, 300))
    from PySide6.QtGui import QImage

    assert QImage(str(tmp_path / "cross.png")).size().width() == 400
    encoder = trace_views.view(trace, "encoder")
    export.export_attention(encoder.trace, tmp_path / "encoder.npy", 0, "all")
    assert np.load(tmp_path / "encoder.npy").shape == (4, 5, 5)


# ----- the window ------------------------------------------------------------------------------
@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QMessageBox

    from explorer.app.window.main_window import MainWindow
    from explorer.app.window.settings import AppSettings

    warnings = []
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path / "store"))
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: warnings.append(text))
    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    win = MainWindow(settings=settings, autosave_path=tmp_path / "autosave.json", catalog=lambda: [])
    win.warnings = warnings
    win.show()
    yield win
    win.close()


def test_stepping_a_translation_in_the_window(qtbot, window):
    from PySide6.QtWidgets import QApplication

    window.prompt.set_text(SOURCE)
    window.open_model(str(TRANSLATOR))
    settle(QApplication.instance(), lambda: window.session.trace is not None and not window.worker.busy)
    assert window.docks["prompt"].windowTitle() == "Source"
    assert window.actions.step.isEnabled()
    for _ in range(len(TARGET) - 1):
        window.actions.step.trigger()
        settle(QApplication.instance(), lambda: not window.worker.busy)
    trace = window.session.trace
    assert list(trace.token_text) == TARGET and not window.warnings
    attention = window.docks["attention"].widget()
    attention.kind_box.combo.setCurrentIndex(2)                      # the person picks cross-attention
    assert window.session.selection.attention == "cross"
    assert attention.matrix.shape == (len(TARGET), 5)
    assert np.allclose(attention.matrix.sum(axis=1), 1.0, atol=1e-4)
    window.actions.back.trigger()
    settle(QApplication.instance(), lambda: not window.worker.busy and window.session.trace.n_tokens == 6)
    assert attention.matrix.shape == (6, 5)
    # A saved session of a translation replays from its source, not from the target's <s>.
    assert window.session_state().prompt_ids[0] == trace.encoder.token_ids[0]


def test_recording_a_translation_in_float16_replays_it_from_its_source(qtbot, window):
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    window.prompt.set_text(SOURCE)
    window.open_model(str(TRANSLATOR))
    settle(app, lambda: window.session.trace is not None and not window.worker.busy)
    for _ in range(3):
        window.actions.step.trigger()
        settle(app, lambda: not window.worker.busy)
    before = window.session.trace
    window.menus.half_trace.trigger()
    settle(app, lambda: window.session.trace is not before and not window.worker.busy)
    after = window.session.trace
    assert list(after.token_text) == list(before.token_text) and not window.warnings
    assert after.encoder.token_ids.tolist() == before.encoder.token_ids.tolist()
    assert after.steps[-1].layers[0].cross.q.dtype == np.float16
    np.testing.assert_allclose(after.attention(1, cross=True).astype(np.float32), before.attention(1, cross=True),
                               atol=2e-3)


def make_tiny_bert(folder: Path) -> Path:
    """A random BERT (model_type "bert") with the tiny BPE tokenizer, as a Hugging Face folder."""
    import torch
    import transformers

    from tests.app.tiny_model import make_tokenizer

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = make_tokenizer(folder)
    config = transformers.BertConfig(vocab_size=tokenizer.get_vocab_size(), hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=64, max_position_embeddings=64)
    torch.manual_seed(0)
    transformers.BertModel(config).save_pretrained(folder, safe_serialization=True)
    return folder


def test_an_encoder_only_model_disables_step_and_says_why(qtbot, window, tmp_path):
    from PySide6.QtWidgets import QApplication

    from explorer.core.encoder import NO_DECODING

    bert = make_tiny_bert(tmp_path / "tiny-bert")
    window.prompt.set_text("To be, or not")
    window.open_model(str(bert))
    settle(QApplication.instance(), lambda: window.session.trace is not None and not window.worker.busy)
    trace = window.session.trace
    assert trace.model.is_encoder_only and [s.kind for s in trace.steps] == ["encode"]
    for action in (window.actions.step, window.actions.back, window.actions.play):
        assert not action.isEnabled()
        assert NO_DECODING[1:] in action.toolTip()              # the engine's sentence, capitalised
    assert window.actions.run.isEnabled()
    window.controller.step()                                          # Space or Play cannot get past it either
    settle(QApplication.instance(), lambda: not window.worker.busy)
    assert window.session.trace is trace and not window.warnings
    attention = window.docks["attention"].widget()
    n = trace.n_tokens
    assert attention.matrix.shape == (n, n) and np.isfinite(attention.matrix).all()   # the full mask
    assert not attention.kind_box.isVisible()
    assert window.docks["prompt"].windowTitle() == "Prompt"
    window.menus.half_trace.trigger()                                 # float16: the encoder runs again
    settle(QApplication.instance(), lambda: window.session.trace is not trace and not window.worker.busy)
    half = window.session.trace
    assert half.token_ids.tolist() == trace.token_ids.tolist() and not window.warnings
    assert half.steps[0].layers[0].attn.q.dtype == np.float16


def test_the_export_command_writes_cross_and_encoder_attention_of_a_translation(qapp, tmp_path, monkeypatch):
    from explorer import cli

    monkeypatch.setattr(cli, "SUBCOMMANDS", {"export": cli.SUBCOMMANDS["export"]})
    run = ("export", "--model", str(TRANSLATOR), "--prompt", "March 5, 2024", "--steps", "11", "--layer", "2")
    assert cli.main([*run, "--attention", "cross", "--head", "all", "-o", str(tmp_path / "cross.npy")]) == 0
    cross = np.load(tmp_path / "cross.npy")
    assert cross.shape == (4, 12, 8)                  # heads × (<s> + 11 target tokens) × (<2zh> + 7 source tokens)
    assert np.allclose(cross.sum(axis=-1), 1.0, atol=1e-4)
    assert cli.main([*run, "--attention", "encoder", "--head", "0", "-o", str(tmp_path / "encoder.csv")]) == 0
    assert read_map(tmp_path / "encoder.csv")[0].shape == (8, 8)
    assert cli.main([*run, "--attention", "cross", "--head", "0", "-o", str(tmp_path / "cross.png")]) == 0
    assert cli.main(["export", "--model", str(TRANSLATOR), "--prompt", "x", "--attention", "cross",
                     "--layer", "9", "-o", str(tmp_path / "bad.npy")]) == 2


def test_cross_qkv_rows_keep_their_own_range_after_showing_the_self_attention(qtbot, session, translation):
    trace = translation[1][-1]
    qkv = make(qtbot, session, QKVPanel)
    session.set_trace(trace)                                       # drawn once as self-attention: 7 rows each
    session.select(attention="cross")
    ranges = {name: heatmap.plot.getViewBox().viewRange()[1] for name, heatmap in qkv.heatmaps.items()}
    assert ranges == {"Q_0": [-0.5, 6.5], "K_0": [-0.5, 4.5], "V_0": [-0.5, 4.5]}


def test_a_source_token_is_selected_as_a_source_token_not_as_the_target_at_its_index(qtbot, session, translation):
    from explorer.app.panels import TokensPanel

    _, traces = translation
    trace = traces[-1]
    attention = make(qtbot, session, AttentionPanel)
    tokens = make(qtbot, session, TokensPanel)
    tokenizer = translation[0].loaded.tokenizer
    session.set_token_display(tokenizer.display)
    session.set_text_decoder(lambda ids: tokenizer.tokenizer.decode([int(i) for i in ids], skip_special_tokens=True))
    session.set_trace(trace)
    session.select(attention="cross", layer=1, head=0, token=5)
    attention._click_large(2, 4)                       # target row 2 (二) against source column 4 (␣hundred)
    assert (session.selection.token, session.selection.source) == (2, 4)
    assert attention.large.highlighted == (2, 4)      # the source column is lit, not the target's column 2
    session.select(attention="encoder")
    attention._click_large(3, 1)                       # the encoder's rows and columns are source tokens
    assert (session.selection.token, session.selection.source) == (2, 3)   # the target token stays
    assert attention.large.highlighted == (3, 3)
    session.select(attention="self")
    assert attention.large.highlighted == (2, 2)      # the target token again, in target space
    line = tokens.translation.document.toHtml().replace("&nbsp;", " ")
    assert "> three</span>" in line and "twelve thousand" in line    # the source token 3 lit in the source


def test_the_tokens_panel_of_a_translation_selects_and_lights_source_tokens(qtbot, session, translation):
    from explorer.app.panels import TokensPanel

    decoder, traces = translation
    trace, tokenizer = traces[-1], decoder.loaded.tokenizer
    tokens = make(qtbot, session, TokensPanel)
    session.set_tokens(tokenizer.encode(SOURCE))           # the source as typed: no task token
    session.set_trace(trace)
    assert [row.token_id for row in tokens.rows] == trace.encoder.token_ids[1:].tolist()   # its rows: the source
    session.select(token=4)                                # a target token (千)
    tokens.table.selectRow(1)                              # the person picks "␣thousand" in the table
    assert (session.selection.token, session.selection.source) == (4, 2)     # source 2 behind <2zh>; 千 stays
    assert trace.encoder.token_text[session.selection.source] == "␣thousand"
    session.select(source=3)                               # picked in a source view: "␣three"
    assert tokens.table.selectionModel().isRowSelected(2) and tokens.highlighted_token == 2
    session.select(source=None, token=1)                   # a target token alone lights no source row
    assert tokens.highlighted_token is None


@pytest.mark.parametrize("layer, head", [(2, 0), (2, "all"), ("all", "all")])
def test_an_exported_cross_map_says_it_is_cross_attention(qtbot, translation, layer, head):
    """A cross-attention figure's title names it (it read as the decoder's self-attention: 'layer 0, head 0, A');
    the self-attention's does not."""
    from explorer.drawing.figures import attention_figure

    trace = translation[1][-1]
    for kind, named in (("cross", True), ("self", False)):
        view = trace_views.view(trace, kind)
        figure = attention_figure(view.trace, layer, head, 640, 480, cross=view.cross)
        title = figure.ci.getItem(0, 0).text
        assert ("cross-attention" in title) == named, (kind, title)


def test_kv_panel_ticks_whole_layers_for_a_three_layer_decoder(qtbot, session, translation):
    """Layers are counted: the translator's 3 decoder layers were ticked 0, 0.5, 1, 1.5, 2 (drive 15)."""
    _, traces = translation
    kv = make(qtbot, session, KVCachePanel)
    session.set_trace(traces[-1])
    qtbot.waitUntil(lambda: not kv.drawing, timeout=10000)
    axis = kv.plots.layer_plot.getAxis("bottom")
    ticks = [value for _, values in axis.tickValues(*axis.range, axis.width()) for value in values]
    assert ticks and all(float(value).is_integer() for value in ticks), ticks


def test_an_encoder_reads_its_whole_context_and_is_never_said_to_keep_a_next_token(qtbot, window, tmp_path,
                                                                                    dialogs):
    """An encoder predicts no next token: a prompt of exactly its positions runs unasked, and a longer one's
    question says how many it holds without "one of them for the next token" (drive29, MiniLM)."""
    import json

    from PySide6.QtWidgets import QApplication, QMessageBox
    from tokenizers import Tokenizer

    bert = make_tiny_bert(tmp_path / "tiny-bert")
    context = json.loads((bert / "config.json").read_text())["max_position_embeddings"]
    tokenizer = Tokenizer.from_file(str(bert / "tokenizer.json"))
    words = "To be, or not to be, that is the question "
    text = next(words * k for k in range(1, 64) if len(tokenizer.encode(words * k).ids) > context)
    exact = tokenizer.decode(tokenizer.encode(text).ids[:context])
    assert len(tokenizer.encode(exact).ids) == context
    window.prompt.set_text(exact)
    window.open_model(str(bert))
    settle(QApplication.instance(), lambda: window.session.trace is not None and not window.worker.busy)
    assert window.session.trace.n_tokens == context and not dialogs["questions"]
    dialogs["answer"] = QMessageBox.StandardButton.No
    window.prompt.set_text(text)
    window.actions.run.trigger()
    settle(QApplication.instance(), lambda: bool(dialogs["questions"]) and not window.worker.busy)
    [question] = dialogs["questions"]
    assert f"holds {context:,} positions." in question and "next token" not in question, question


def test_a_translators_long_source_is_said_to_keep_a_position_for_its_task_token(qtbot, window, dialogs):
    """A source past the translator's positions: the question keeps one for the task token its encoder reads
    first (encdec_decode.source_ids adds it), never "for the next token", which a decoder keeps (session 29)."""
    import json

    from PySide6.QtWidgets import QApplication, QMessageBox

    positions = json.loads((TRANSLATOR / "config.json").read_text())["max_position_embeddings"]
    window.prompt.set_text(SOURCE)
    window.open_model(str(TRANSLATOR))
    settle(QApplication.instance(), lambda: window.session.trace is not None and not window.worker.busy)
    dialogs["answer"] = QMessageBox.StandardButton.No
    window.prompt.set_text(" ".join([SOURCE] * positions))
    window.actions.run.trigger()
    settle(QApplication.instance(), lambda: bool(dialogs["questions"]) and not window.worker.busy)
    [question] = dialogs["questions"]
    assert f"holds {positions:,} positions, one of them for the task token" in question, question
    assert "next token" not in question, question
