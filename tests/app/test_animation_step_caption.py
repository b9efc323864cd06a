"""Every frame of an animation (and each numbered frame of "Export every step") names its step under the map:
"step 2 of 3 · '·and'", the token fed at that step, or the prompt for the prefill. Read back from the files: the
SVG frames' text, and the GIF's pixels, whose last line of ink is as wide as the caption drawn on its own."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QImage, QPainter

from explorer.app.figures.animation import export_animation, read_animation
from explorer.drawing import export
from tests.app.synthetic_trace import build_trace

SIZE = (480, 400)
PROMPT = 5


@pytest.fixture(scope="module")
def trace():
    return build_trace(n_layers=2, n_heads=4, n_kv_heads=2, prompt_len=PROMPT, steps=3)


def expected(trace, step: int) -> tuple[str, str]:
    """What frame `step` must say: its step among the run's, and what was fed (a word of the token, or the prompt)."""
    fed = "prompt" if step == 0 else trace.token_text[PROMPT + step - 1].strip()
    return f"step {step} of {trace.n_steps - 1}", fed


def ink_rows(frame: np.ndarray) -> list[tuple[int, int]]:
    """Runs of rows holding dark ink on the light figure, top to bottom, as (first, end)."""
    ink = (frame.max(axis=-1) < 120).any(axis=1)
    edges = np.flatnonzero(np.diff(np.concatenate(([0], ink.astype(int), [0]))))
    return list(zip(edges[::2], edges[1::2]))


def ink_width(picture: np.ndarray) -> int:
    columns = np.flatnonzero((picture.max(axis=-1) < 120).any(axis=0))
    return int(columns[-1] - columns[0] + 1) if columns.size else 0


def drawn_alone(text: str, pixel_size: int) -> np.ndarray:
    """`text` drawn by itself in black on white, at `pixel_size`, as RGB."""
    image = QImage(1600, 4 * pixel_size, QImage.Format.Format_RGB888)
    image.fill(QColor("white"))
    painter = QPainter(image)
    font = QFont()
    font.setPixelSize(pixel_size)
    painter.setFont(font)
    painter.setPen(QColor("black"))
    painter.drawText(image.rect(), int(Qt.AlignmentFlag.AlignCenter), text)
    painter.end()
    rows = np.frombuffer(image.constBits(), np.uint8, image.bytesPerLine() * image.height())
    return rows.reshape(image.height(), image.bytesPerLine())[:, : 3 * image.width()].reshape(
        image.height(), image.width(), 3).copy()


def test_each_numbered_svg_frame_names_its_step_and_its_token(qtbot, trace, tmp_path):
    paths = export.export_frames(trace, tmp_path / "frame.svg", 1, 2, size=SIZE)
    assert len(paths) == trace.n_steps
    for step, path in enumerate(paths):
        texts = ["".join(node.itertext()) for node in ET.parse(path).getroot().iter("{http://www.w3.org/2000/svg}text")]
        step_words, fed = expected(trace, step)
        named = [text for text in texts if step_words in text]
        assert len(named) == 1 and fed in named[0], (step, texts)


def test_each_gif_frames_last_line_is_its_caption_as_wide_as_drawn_alone(qtbot, trace, tmp_path):
    frames = read_animation(export_animation(trace, tmp_path / "decoding.gif", 1, 2, size=SIZE))
    assert len(frames) == trace.n_steps
    ratios = []
    for step, frame in enumerate(frames):
        first, end = ink_rows(frame)[-1]                      # the caption: the last line of ink
        height = end - first
        assert 6 <= height <= 40, f"frame {step}'s last line of ink is {height} px tall: not a line of text"
        caption = export.step_caption(trace, step)
        assert expected(trace, step)[0] in caption
        alone = drawn_alone(caption, pixel_size=14)
        ratios.append(ink_width(frame[first:end]) / ink_width(alone))
    # one text size for every frame: each last line is its own caption's width, the prefill's long one included
    assert max(ratios) / min(ratios) < 1.12, ratios
    assert 0.6 < np.median(ratios) < 1.6, ratios
    bottoms = [frame[ink_rows(frame)[-1][0]: ink_rows(frame)[-1][1]] for frame in frames]
    assert not np.array_equal(bottoms[1], bottoms[2]), "two steps' captions are the same pixels"
