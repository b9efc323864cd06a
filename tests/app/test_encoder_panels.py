"""An encoder-only model (BERT-style, like MiniLM) in the window: the panels that do not apply step aside and
say what does; the KV lab offers no what-if conversion, which would compare next-token predictions."""
from __future__ import annotations

import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)

from tests.app.test_encdec_app import make_tiny_bert
from tests.app.window_helpers import new_window, opened

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


@pytest.fixture
def encoder_window(qtbot, tmp_path, dialogs):
    window = new_window(qtbot, tmp_path)
    window.resize(1400, 900)
    window.docks["kv_lab"].show()
    window.docks["kv_lab"].raise_()
    opened(qtbot, window, make_tiny_bert(tmp_path / "tiny-bert"))
    yield window
    window.close()


def test_next_token_steps_aside_for_an_encoder_and_says_what_applies(qtbot, encoder_window):
    panel = encoder_window.docks["next_token"].widget()
    assert encoder_window.session.trace.model.is_encoder_only
    text = panel.position_label.document.toPlainText()
    assert "is an encoder" in text and "predicts no next token" in text and "Attention" in text
    assert "top 0 shown" not in panel.header.text() and not panel.header.isVisibleTo(panel)
    assert not panel.table.isVisibleTo(panel) and not panel.lens_button.isVisibleTo(panel)
    assert "click a candidate" not in text


def test_the_kv_lab_offers_no_what_if_for_an_encoder(qtbot, encoder_window):
    lab = encoder_window.docks["kv_lab"].widget()
    assert lab.variant_box.count() == 0 and not lab.variant_box.isEnabled()
    assert not lab.run_button.isEnabled() and not lab.run_conversion("gqa-2")
    assert "is an encoder" in lab.targets_note.text() and not lab.targets_note.isHidden()
