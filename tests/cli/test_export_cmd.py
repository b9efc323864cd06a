"""`python -m explorer export`: a real tiny model decoded through the core, written without a window."""
import xml.etree.ElementTree as ET

import numpy as np
from PySide6.QtGui import QImage


def test_png_of_all_heads_and_npy_of_one_head(export_main, tiny_llama, tmp_path):
    png, npy = tmp_path / "layer.png", tmp_path / "head.npy"
    prompt = ("--model", tiny_llama, "--prompt", "To be, or not to be", "--steps", 3)
    assert export_main(*prompt, "--layer", 1, "--head", "all", "-o", png, "--size", "640x480") == 0
    image = QImage(str(png))
    assert (image.width(), image.height()) == (640, 480)
    assert len({image.pixel(x, y) for x in range(0, 640, 5) for y in range(0, 480, 5)}) > 10
    assert export_main(*prompt, "--layer", 0, "--head", 1, "-o", npy) == 0
    weights = np.load(npy)
    n = weights.shape[0]
    assert weights.shape == (n, n) and n > 3
    assert np.allclose(weights.sum(axis=1), 1.0, atol=1e-4)          # every row is a softmax
    assert np.all(np.triu(weights, k=1) == 0)                         # and causal


def test_full_grid_svg(export_main, tiny_llama, tmp_path):
    svg = tmp_path / "grid.svg"
    assert export_main("--model", tiny_llama, "--prompt", "Whether", "--layer", "all", "-o", svg,
                       "--size", "500x700") == 0
    root = ET.parse(svg).getroot()
    assert (root.get("width"), root.get("height")) == ("500", "700")
    texts = {"".join(node.itertext()).strip() for node in root.iter("{http://www.w3.org/2000/svg}text")}
    assert {"L0", "L1", "H0", "H3"} <= texts


def test_bad_requests_exit_with_status_2_and_one_line(export_main, tiny_llama, tmp_path, capsys):
    assert export_main("--model", tiny_llama, "--prompt", "To be", "--layer", 7, "-o", tmp_path / "a.png") == 2
    assert "Layer 7 does not exist" in capsys.readouterr().err
    assert export_main("--model", tiny_llama, "--prompt", "To be", "-o", tmp_path / "no" / "a.png") == 2
    assert capsys.readouterr().err.strip() == (f"error: Cannot write {tmp_path / 'no' / 'a.png'}: "
                                               f"the folder {tmp_path / 'no'} does not exist.")


def test_a_catalog_name_is_opened_as_the_other_commands_open_it(export_main, tmp_path):
    npy = tmp_path / "head.npy"
    assert export_main("--model", "shakespeare-gqa", "--prompt", "ROMEO:", "--layer", 0, "--head", 0, "-o", npy) == 0
    weights = np.load(npy)
    assert weights.shape[0] == weights.shape[1] > 1 and np.allclose(weights.sum(axis=1), 1.0, atol=1e-4)
