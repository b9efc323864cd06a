"""`python -m explorer export --text-size`: the choices are the app's (views.figure_text), a bad one exits 2 with
one sentence before the model loads, and the labels of the written PNG are measurably larger: the ink of the
title line, found in the image's pixels, is about 1.5 and 2 times as tall and as wide as at --text-size 1."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtGui import QImage

from explorer.views.figure_text import TEXT_SIZES

SIZE = (1000, 800)
DARK = 110                  # a channel below this on the light figure's white is a glyph's ink
TOLERANCE = 0.15            # hinting rounds each glyph to whole pixels
ROOT = Path(__file__).resolve().parents[2]


def pixels(path) -> np.ndarray:
    image = QImage(str(path)).convertToFormat(QImage.Format.Format_RGB888)
    rows = np.frombuffer(image.constBits(), np.uint8, image.bytesPerLine() * image.height())
    # a copy: the array would otherwise read the QImage's memory after the image is freed
    return rows.reshape(image.height(), image.bytesPerLine())[:, : 3 * image.width()].reshape(
        image.height(), image.width(), 3).copy()


def title_box(image: np.ndarray) -> tuple[int, int]:
    """(height, width) of the topmost line of ink: from the first row holding a dark pixel to the first row
    after it holding none, and the columns its dark pixels span."""
    ink = image.max(axis=2) < DARK
    rows = np.flatnonzero(ink.any(axis=1))
    assert rows.size, "no text in the image"
    top = bottom = rows[0]
    while bottom + 1 < len(ink) and ink[bottom + 1].any():
        bottom += 1
    columns = np.flatnonzero(ink[top: bottom + 1].any(axis=0))
    return int(bottom - top + 1), int(columns[-1] - columns[0] + 1)


def test_the_app_and_the_cli_offer_the_same_text_sizes():
    from explorer.app.figures.figure_settings import FIGURE_TEXT_SCALES

    assert FIGURE_TEXT_SCALES == tuple(size.scale for size in TEXT_SIZES) == (1.0, 1.5, 2.0)


def test_text_size_makes_the_exported_labels_larger(tiny_llama, tmp_path):
    boxes = {}
    for option in ("1", "1.5", "2"):
        png = tmp_path / f"head_{option}.png"
        # its own process, as a person runs it: fonts and styles left by other tests in this one do not count
        done = subprocess.run([sys.executable, "-m", "explorer", "export", "--model", str(tiny_llama), "--prompt",
                               "To be, or not to be", "--layer", "0", "--head", "1", "--size", "{}x{}".format(*SIZE),
                               "--text-size", option, "-o", str(png)],
                              cwd=ROOT, env=dict(os.environ, QT_QPA_PLATFORM="offscreen"), capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        boxes[float(option)] = title_box(pixels(png))
    height, width = boxes[1.0]
    assert height >= 8 and width >= 80, f"the normal title's ink is {width}x{height} px"
    for scale in (1.5, 2.0):
        assert abs(boxes[scale][0] / height - scale) <= TOLERANCE * scale, boxes
        assert abs(boxes[scale][1] / width - scale) <= TOLERANCE * scale, boxes


@pytest.mark.parametrize("bad", ["3", "huge", "0"])
def test_a_bad_text_size_exits_2_with_one_sentence(export_main, tmp_path, capsys, bad):
    assert export_main("--model", tmp_path / "never-read", "--prompt", "To be", "--text-size", bad,
                       "-o", tmp_path / "a.png") == 2
    error = capsys.readouterr().err.strip()
    assert error == f"error: --text-size {bad!r} is not a text size; choose one of 1, 1.5, 2.", error
    assert not (tmp_path / "a.png").exists()
