"""A click on an encoder–decoder's attention cell leaves Show the work unbuilt (issue 22). The window asked the
panel itself whether it could derive the cell, and a panel behind the bottom tabs is built when first asked for
(PanelDock.widget): the click built Show the work only to hear that it needs a decoder-only model. The rule is
asked of the trace now (panels.derivable), which the panel draws by too. A decoder-only model's click still
builds Show the work and brings it to the front."""
from __future__ import annotations

import json

import pytest

from explorer.app.panels.derivable import cannot_derive
from tests.app.journey import BUNDLED
from tests.app.window_helpers import idle, opened

pytestmark = pytest.mark.usefixtures("store_home")


def click_cell(qtbot, window) -> None:
    """What a click on cell (row, 0) of the attention map does (AttentionPanel: one select of token and key)."""
    row = min(1, window.session.trace.n_tokens - 1)
    window.session.select(token=row, key=0)
    qtbot.wait(50)                                    # anything the click queued has run
    assert window.session.selection.cell == (row, 0)


def test_a_click_on_the_translators_map_builds_no_show_the_work(qtbot, window):
    folder = BUNDLED / "translate-en-zh"
    config = json.loads((folder / "config.json").read_text())
    assert config["n_encoder_layers"] and config["n_decoder_layers"]          # an encoder–decoder, by its file
    trace = opened(qtbot, window, folder, "The cat sat on the mat.")
    dock = window.docks["derivation"]
    assert not dock.built, "Show the work was built before any click: the test shows nothing"
    click_cell(qtbot, window)
    assert not dock.built, "a click Show the work cannot derive built it"
    assert cannot_derive(trace) is not None and cannot_derive(trace) == dock.widget().unavailable(trace)


def test_a_click_on_a_decoders_map_builds_and_raises_show_the_work(qtbot, window):
    trace = opened(qtbot, window, BUNDLED / "shakespeare-gqa", "To be, or not to be, that is")
    dock = window.docks["derivation"]
    click_cell(qtbot, window)
    idle(qtbot, window)
    assert dock.built and dock.widget().is_shown(), "the click did not bring Show the work to the front"
    assert cannot_derive(trace) is None and dock.widget().unavailable(trace) is None
