"""A clicked candidate does not stay lit beside the token chosen after the branch: one row is marked, the chosen."""
from __future__ import annotations

import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)
from PySide6.QtCore import Qt

from tests.app.window_helpers import idle, new_window, opened

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def test_only_the_chosen_candidate_is_marked_after_a_branch(qtbot, tmp_path, tiny, dialogs):
    window = new_window(qtbot, tmp_path)
    try:
        before = opened(qtbot, window, tiny)
        panel = window.docks["next_token"].widget()
        table = panel.table
        row = 2
        clicked = int(table.item(row, 2).text())
        rect = table.visualRect(table.model().index(row, 1))
        qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
        trace = idle(qtbot, window, lambda: window.session.trace.n_steps == before.n_steps + 1)
        assert trace.steps[-2].chosen_id == clicked and trace.steps[-2].forced
        assert table.selectedItems() == []
        chosen = panel._chosen(trace, trace.n_tokens - 1)[0]
        marked = [r for r in range(table.rowCount()) if table.item(r, 1).font().bold()]
        assert [int(table.item(r, 2).text()) for r in marked] == [chosen]
    finally:
        window.close()
