"""Exports: open what was written and look inside (pixels, XML, numbers)."""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PySide6.QtGui import QColor, QImage

from explorer.app.figures import export_dialogs
from explorer.core.errors import ExplorerError
from explorer.drawing import export
from explorer.drawing.figures import attention_figure
from explorer.views.maps import short_label
from tests.app.csv_maps import read_map
from tests.app.synthetic_trace import build_trace

VIRIDIS_TOP = QColor("#fde725")     # the colour of weight 1.0


@pytest.fixture
def trace():
    return build_trace(n_layers=2, n_heads=3, prompt_len=6, steps=2)


def close_to(colour: QColor, expected: QColor, tolerance: int = 24) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(colour.getRgb()[:3], expected.getRgb()[:3]))


def test_png_has_the_requested_size_and_the_cells_colours(qtbot, tmp_path, trace):
    path = tmp_path / "head.png"
    figure = attention_figure(trace, 1, 2, 640, 480)
    heatmap = figure.heatmaps[0]
    sure = heatmap.scene_pos_of(0, 0)         # query 0 sees only key 0: weight exactly 1
    masked = heatmap.scene_pos_of(0, 7)       # query 0 may not see key 7
    export.save_figure(figure, path, 640, 480)
    figure.close()
    image = QImage(str(path))
    assert (image.width(), image.height()) == (640, 480)
    assert close_to(image.pixelColor(int(sure.x()), int(sure.y())), VIRIDIS_TOP)
    assert not close_to(image.pixelColor(int(masked.x()), int(masked.y())), VIRIDIS_TOP, 80)
    colours = {image.pixel(x, y) for x in range(0, 640, 8) for y in range(0, 480, 8)}
    assert len(colours) > 10


@pytest.mark.parametrize("layer, head, size", [(0, "all", (900, 700)), ("all", "all", (500, 820))])
def test_png_of_a_layer_and_of_the_full_grid(qtbot, tmp_path, trace, layer, head, size):
    path = export.export_attention(trace, tmp_path / "many.png", layer, head, size=size, log=True)
    image = QImage(str(path))
    assert (image.width(), image.height()) == size
    assert len({image.pixel(x, y) for x in range(0, size[0], 6) for y in range(0, size[1], 6)}) > 10


def test_svg_parses_with_the_requested_size_token_labels_and_colour_bar(qtbot, tmp_path, trace):
    path = export.export_attention(trace, tmp_path / "head.svg", 0, 1, size=(700, 560))
    root = ET.parse(path).getroot()
    assert (root.get("width"), root.get("height")) == ("700", "560")
    texts = {"".join(node.itertext()).strip() for node in root.iter("{http://www.w3.org/2000/svg}text")}
    for token in set(trace.token_text):
        assert short_label(token) in texts, token
    assert {"0", "1.0"} <= texts or {"0", "1"} <= texts          # the colour bar's ticks
    assert not any(node.tag.endswith("image") for node in root.iter())        # cells are vector rectangles
    assert sum(node.tag.endswith("rect") for node in root.iter()) >= len(trace.token_text)


def test_csv_and_npy_round_trip_the_trace_matrix(qtbot, tmp_path, trace):
    weights = trace.attention(1)[2]
    export.export_attention(trace, tmp_path / "a.csv", 1, 2)
    export.export_attention(trace, tmp_path / "a.npy", 1, 2)
    assert np.allclose(read_map(tmp_path / "a.csv")[0], weights, atol=1e-8, rtol=1e-6)
    assert np.array_equal(np.load(tmp_path / "a.npy"), weights)
    export.export_attention(trace, tmp_path / "all.npy", 0, "all", step=1)
    assert np.array_equal(np.load(tmp_path / "all.npy"), trace.attention(0, upto_step=1))
    export.export_attention(trace, tmp_path / "s.csv", 0, 0, values="scores")
    scores = trace.scores(0, 0)
    assert np.isneginf(scores).any()
    assert np.allclose(read_map(tmp_path / "s.csv")[0], scores, rtol=1e-6)


def test_unwritable_paths_raise_one_sentence(qtbot, tmp_path, trace):
    with pytest.raises(ExplorerError, match=r"^Cannot write .*missing.*: the folder .* does not exist\.$"):
        export.export_attention(trace, tmp_path / "missing" / "a.png", 0, 0)
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(ExplorerError, match=r"is a file, not a folder\.$"):
        export.export_attention(trace, tmp_path / "file.txt" / "a.npy", 0, 0)
    with pytest.raises(ExplorerError, match=r"must end in one of \.png, \.svg, \.csv, \.npy\.$"):
        export.export_attention(trace, tmp_path / "a.jpg", 0, 0)
    with pytest.raises(ExplorerError, match=r"^Head 9 does not exist"):
        export.export_attention(trace, tmp_path / "a.png", 0, 9)


def test_a_table_asked_into_a_picture_s_name_is_refused_and_writes_nothing(tmp_path):
    # seen driving the app: the KV cache's comparison CSV typed as "kv.png" wrote CSV text into a .png
    with pytest.raises(ExplorerError, match=r"^Cannot export to .*kv\.png: the file name must end in one of \.csv\.$"):
        export.write_text(tmp_path / "kv.png", "a,b\n1,2\n")
    assert not (tmp_path / "kv.png").exists()
    assert export.write_text(tmp_path / "kv.CSV", "a,b\n1,2\n").read_text() == "a,b\n1,2\n"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "kept.npy"
    target.write_bytes(b"old")

    def broken(temporary):
        with open(temporary, "wb") as handle:
            handle.write(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(ExplorerError, match="the disk is full"):
        export.atomic_write(target, broken)
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["kept.npy"]


def test_export_every_step_writes_numbered_frames(qtbot, tmp_path, trace):
    written = export.export_frames(trace, tmp_path / "frame.png", 0, 1, size=(320, 240))
    assert [p.name for p in written] == ["frame_0000.png", "frame_0001.png", "frame_0002.png"]
    for path in written:
        image = QImage(str(path))
        assert (image.width(), image.height()) == (320, 240)
    assert np.load(export.export_frames(trace, tmp_path / "m.npy", 0, 1)[0]).shape == (6, 6)


def test_panel_widget_export(qtbot, tmp_path, trace):
    from explorer.app.panels import MaskPanel
    from explorer.app.state.session import Session

    session = Session()
    panel = MaskPanel(session)
    qtbot.addWidget(panel)
    panel.resize(500, 400)
    panel.show()
    session.set_trace(trace)
    export.save_widget(panel, tmp_path / "mask.png")
    export.save_widget(panel, tmp_path / "mask.svg")
    assert QImage(str(tmp_path / "mask.png")).width() == 500
    assert ET.parse(tmp_path / "mask.svg").getroot().tag.endswith("svg")


def test_panel_export_actions_write_files_and_report_errors(qtbot, tmp_path, trace, monkeypatch):
    from explorer.app.panels import AttentionPanel, KVCachePanel
    from explorer.app.state.session import Session

    session = Session()
    attention, kv = AttentionPanel(session), KVCachePanel(session)
    for panel in (attention, kv):
        qtbot.addWidget(panel)
        panel.show()
    session.set_trace(trace)
    session.select(layer=1, head=2)
    chosen = {"path": tmp_path / "head.png"}
    monkeypatch.setattr(export_dialogs, "ask_path", lambda *args: chosen["path"])
    monkeypatch.setattr(export_dialogs, "ask_size", lambda parent, default=None: (300, 200))
    head_action = attention.export_actions()[0]
    head_action.trigger()
    assert QImage(str(tmp_path / "head.png")).size().toTuple() == (300, 200)
    chosen["path"] = tmp_path / "raw.npy"
    attention.export_actions()[3].trigger()
    assert np.array_equal(np.load(tmp_path / "raw.npy"), trace.attention(1)[2])
    chosen["path"] = tmp_path / "kv.csv"
    kv.export_actions()[-1].trigger()
    assert (tmp_path / "kv.csv").read_text().splitlines()[0].startswith("variant,kv_heads")
    chosen["path"] = tmp_path / "gone" / "head.png"
    with qtbot.waitSignal(session.error_raised) as raised:
        head_action.trigger()
    assert raised.args[0].startswith(f"Cannot write {tmp_path / 'gone' / 'head.png'}")
