"""Why this token ▸ Export … as shown on screen: the picture carries its plot titles whole. On screen a title longer
than two lines of its plot is cut with "…" (its tooltip holds the rest); a file has no tooltip, and the export kept
the cut.
Checked on what is drawn while the picture is taken, on the picture's pixels (more ink where the title is, as the
whole text drawn alone has more than the cut one), and on the panel afterwards (cut again, as it was)."""
from __future__ import annotations

import numpy as np
from PySide6.QtGui import QImage

from explorer.app.figures import export_dialogs
from explorer.app.panels.attribution import AttributionPanel
from explorer.drawing import export
from explorer.drawing.colours import printed
from explorer.drawing.plot_title import FittingTitle
from tests.app.why_helpers import answered


def rgb(image: QImage) -> np.ndarray:
    image = image.convertToFormat(QImage.Format.Format_RGB888)
    rows = np.frombuffer(image.constBits(), np.uint8, image.bytesPerLine() * image.height())
    return rows.reshape(image.height(), image.bytesPerLine())[:, : 3 * image.width()].reshape(
        image.height(), image.width(), 3).copy()


def lines_above_the_map(image: np.ndarray, left: int, right: int, top: int) -> int:
    """Lines of dark text from `top` down, between `left` and `right`, above the first row of the map's colours."""
    view = image[top:, left:right].astype(int)
    colour = (view.max(axis=-1) - view.min(axis=-1) > 60).sum(axis=1) > 10
    first = int(np.flatnonzero(colour)[0])
    ink = (view[:first].max(axis=-1) < 110).any(axis=1)
    return int(np.count_nonzero(np.diff(np.concatenate(([0], ink.astype(int)))) == 1))


def narrow(panel):
    """`panel` too narrow for its map's title even on two lines (plot_title.WRAPPED_LINES): cut on screen."""
    panel.resize(300, panel.height())
    return panel


def cut_titles(panel) -> list[FittingTitle]:
    return [item for item in panel.view.items() if isinstance(item, FittingTitle) and item.isVisible()
            and item.item.toPlainText().endswith("…")]


def test_the_panels_picture_holds_its_titles_whole_and_the_panel_is_cut_again_after(qtbot, session, traced_llama,
                                                                                      tmp_path, monkeypatch):
    panel = narrow(answered(qtbot, AttributionPanel, session, traced_llama, "tall"))
    qtbot.waitUntil(lambda: bool(cut_titles(panel)), timeout=10000)
    qtbot.wait(300)                                # laid out and drawn as it stays
    title = cut_titles(panel)[0]
    whole, cut = title.text, title.item.toPlainText()
    assert cut.endswith("…") and len(cut) < len(whole)
    with printed(panel, "light"):                  # the picture as taken before: in the figure colours, cut
        before = rgb(panel.grab().toImage())
    drawn = []
    grab = panel.grab

    def grabbing(*args):
        drawn.append(title.item.toPlainText())
        return grab(*args)

    monkeypatch.setattr(panel, "grab", grabbing)
    path = tmp_path / "why.png"
    monkeypatch.setattr(export_dialogs, "ask_path", lambda *a, **k: path)
    next(a for a in panel.export_actions() if "as shown on screen" in a.text()).trigger()
    qtbot.waitUntil(path.exists, timeout=10000)
    assert drawn and "…" not in drawn[0] and drawn[0].split() == whole.split(), drawn
    picture = rgb(QImage(str(path)))
    assert picture.shape == before.shape
    # above the map, the title takes more lines of text than the one it took cut
    where = title.mapRectToScene(title.boundingRect())
    corner = panel.view.mapTo(panel, panel.view.mapFromScene(where.topLeft()))
    box = (corner.x(), corner.x() + int(where.width()), corner.y())
    assert lines_above_the_map(picture, *box) > lines_above_the_map(before, *box)    # (its frame's line in both)
    # the panel as it was: cut again, the same pixels
    assert title.item.toPlainText() == cut
    with printed(panel, "light"):
        assert np.array_equal(rgb(grab().toImage()), before)


def test_the_svg_carries_the_whole_title_text(qtbot, session, traced_llama, tmp_path):
    panel = narrow(answered(qtbot, AttributionPanel, session, traced_llama, "tall"))
    qtbot.waitUntil(lambda: bool(cut_titles(panel)), timeout=10000)
    whole = cut_titles(panel)[0].text
    text = export.save_widget(panel, tmp_path / "why.svg").read_text(encoding="utf-8")
    words = whole.split()
    assert all(word.replace("'", "&#39;") in text or word in text for word in words[-3:]), words[-3:]
