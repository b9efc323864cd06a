"""Exports: attention maps as PNG (chosen pixel size) or SVG with token labels and a
colour bar, raw matrices as CSV or .npy, and numbered frames of every step.

Every file is written to a temporary name in the target folder and moved into
place with `os.replace`, so a failed export never leaves half a file. A path the
person cannot write raises an `ExplorerError` with one sentence.

No dialog here: the CLI writes the same files as the window, whose dialogs ask for
the path and size (explorer.app.figures.export_dialogs).
"""
from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from pyqtgraph.exporters import ImageExporter, SVGExporter
from PySide6.QtCore import QBuffer, QByteArray, QIODevice

from explorer.core import files
from explorer.core.errors import ExplorerError
from explorer.core.trace import Trace
from explorer.drawing.colours import figure_colours, printed
from explorer.drawing.export_whole import whole_tables, whole_titles
from explorer.drawing.figures import attention_figure, kind_words, lay_out
from explorer.drawing.heatmap_axes import text_px
from explorer.drawing.vector_cells import baked_strokes, page_coordinates, sharp_images, vector_cells
from explorer.views.image_limits import check_image_size
from explorer.views.maps import short_label
from explorer.views.words import plural

IMAGE_SUFFIXES = (".png", ".svg")
DATA_SUFFIXES = (".csv", ".npy")
DEFAULT_SIZE = (1000, 800)
GRID_TILE_PX = (40, 240)        # the least and most a grid's tile is given by default, square
GRID_MARGINS = (160, 130)       # px beside and above the tiles: labels, title, colour bar


class ExportError(ExplorerError):
    """An export could not be written where the person asked."""


# ----- files --------------------------------------------------------------------------
def check_writable(path: Path) -> Path:
    """Raise a one-sentence ExportError unless a file can be created at `path`."""
    path = Path(path).expanduser()
    folder = path.parent if str(path.parent) else Path(".")
    try:
        if not folder.exists():
            raise ExportError(f"Cannot write {path}: the folder {folder} does not exist.")
        if not folder.is_dir():
            raise ExportError(f"Cannot write {path}: {folder} is a file, not a folder.")
    except OSError as error:               # a folder above it that cannot be searched
        raise files.write_failure(path, error, error_type=ExportError) from None
    files.check_writable(path, error_type=ExportError)     # a folder, a pipe, a link that loops, a read-only file
    return path


def atomic_write(path: Path, write: Callable[[str], None]) -> Path:
    """Call `write(temporary_path)`, then move the result onto `path` in one step (core.files.write_atomic)."""
    return files.write_atomic(check_writable(Path(path)), write, error_type=ExportError)


def png_bytes(picture, what: str) -> bytes:
    """A QImage's or QPixmap's PNG, encoded in memory: written by Python, a full disk or a read-only folder is
    reported as what it is (libpng writing to the file said only "Write Error", and Qt "could not encode")."""
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not picture.save(buffer, "PNG"):
        raise OSError(f"Qt could not encode {what}")
    return bytes(data.data())


def _suffix(path: Path, allowed: tuple[str, ...]) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in allowed:
        names = ", ".join(allowed)
        raise ExportError(f"Cannot export to {path}: the file name must end in one of {names}.")
    return suffix


# ----- raw matrices ------------------------------------------------------------------------
def save_matrix(matrix: np.ndarray, path: Path, header: str = "",
                labels: tuple[Sequence[str], Sequence[str]] | None = None) -> Path:
    """Write a 2-D or 3-D matrix as .npy (as is) or .csv (attention_csv: 3-D stacked head after head), the CSV's
    rows and columns named by `labels` (query tokens, key tokens; positions where None)."""
    matrix = np.asarray(matrix)
    if _suffix(path, DATA_SUFFIXES) == ".npy":
        def write(temporary):
            # encoded in memory, written by Python: a full disk is an OSError with its errno (np.save straight to
            # the file said only "11236 requested and 992 written")
            encoded = io.BytesIO()
            np.save(encoded, matrix)
            Path(temporary).write_bytes(encoded.getbuffer())
    else:
        queries, keys = labels or ([str(q) for q in range(matrix.shape[-2])], [str(k) for k in range(matrix.shape[-1])])

        def write(temporary):
            with open(temporary, "w", newline="", encoding="utf-8") as stream:
                attention_csv(stream, matrix, queries, keys, header)
    return atomic_write(path, write)


def attention_csv(stream, matrix: np.ndarray, queries: Sequence[str], keys: Sequence[str], corner: str = "") -> None:
    """The one CSV of an attention map, which the window and `explorer export` both write: a header row of the key
    tokens, then one row per query token, its token first (a 3-D stack of heads: the head's index before it, head
    after head). Cells are quoted where a token holds a comma, a quote or a line break (Python's csv module);
    numbers are the shortest text that reads back to the very same value in the matrix's own precision
    (float32's 0.33333334, never a rounded 0.333333), and a masked score is -inf."""
    writer = csv.writer(stream)             # rows end in \r\n (RFC 4180): a token "\r" alone is then quoted too
    corner = f"{corner}: query \\ key" if corner else "query \\ key"     # what the rows and columns are
    stacked = matrix.ndim == 3
    writer.writerow((["head"] if stacked else []) + [corner, *keys[: matrix.shape[-1]]])
    for head, rows in enumerate(matrix if stacked else [matrix]):
        lead = [str(head)] if stacked else []
        for query, row in zip(queries, rows):
            writer.writerow(lead + [query, *row.astype(str).tolist()])


def write_text(path: Path, text: str, suffixes: tuple[str, ...] = (".csv",)) -> Path:
    """A text file (e.g. a CSV table), written atomically, under a name ending in one of `suffixes` (a table
    asked into "x.png" would leave a picture's name on text)."""
    _suffix(path, suffixes)
    return atomic_write(path, lambda temporary: Path(temporary).write_text(text, encoding="utf-8"))


def raw_attention(trace: Trace, layer: int, head: int | str, step: int | None = None,
                  values: str = "weights", cross: bool = False) -> np.ndarray:
    """The trace's own matrix: weights (0 where masked) or scores (-inf where masked)."""
    heads = range(trace.model.n_heads) if head == "all" else [int(head)]
    if values == "scores":
        stack = np.stack([trace.scores(layer, h, step, cross) for h in heads])
    else:
        stack = np.stack([trace.attention_head(layer, h, step, cross) for h in heads])   # only the heads asked for
    return stack if head == "all" else stack[0]


def token_labels(trace: Trace, shape: tuple[int, int], cross: bool = False) -> tuple[list[str], list[str]]:
    """The tokens of a (T_q, T_kv) map's rows and columns as the tokenizer shows them, whole (a figure's ticks
    are cut short: views.maps.axis_labels): a cross-attention map's keys are the encoder's source tokens."""
    source = trace.encoder.token_text if cross and trace.encoder is not None else trace.token_text
    return list(trace.token_text[: shape[0]]), list(source[: shape[1]])


# ----- images ------------------------------------------------------------------------------
def save_figure(figure, path: Path, width: int, height: int) -> Path:
    """PNG at exactly width × height pixels, or SVG with that size, of a laid-out figure."""
    if _suffix(path, IMAGE_SUFFIXES) == ".png":
        exporter = ImageExporter(figure.ci)
        exporter.parameters()["width"] = int(width)
        exporter.parameters().param("height").setValue(int(height), blockSignal=exporter.heightChanged)
        image = exporter.export(toBytes=True)

        def write(temporary):
            Path(temporary).write_bytes(png_bytes(image, f"a {width}×{height} PNG"))
    else:
        exporter = SVGExporter(figure.ci)
        exporter.parameters()["width"] = float(width)
        exporter.parameters().param("height").setValue(float(height), blockSignal=exporter.heightChanged)
        with vector_cells(figure, width, height) as cells_in:     # cells as rectangles, not a tiny raster
            svg = page_coordinates(cells_in(exporter.export(toBytes=True).decode("utf-8")))
        # crispEdges: neighbouring cells meet without the hairline seams that antialiasing draws between them
        svg = re.sub(r"<svg ", f'<svg width="{int(width)}" height="{int(height)}" shape-rendering="crispEdges" ',
                     svg, count=1)
        # The background in pixels: SVG Tiny readers (Qt's QSvgRenderer, print tools) read "100%" as 100 px.
        svg = svg.replace('<rect width="100%" height="100%"', f'<rect width="{int(width)}" height="{int(height)}"', 1)

        def write(temporary):
            Path(temporary).write_text(svg, encoding="utf-8")
    return atomic_write(path, write)


def default_size(model, layer: int | str, head: int | str) -> tuple[int, int]:
    """The image size offered for an export: DEFAULT_SIZE for a head or a layer's heads; for the full grid
    (`layer` "all"), square tiles, as large as fit about 1,800 px on the grid's longer side."""
    if layer != "all" or model is None:
        return DEFAULT_SIZE
    tile = int(min(GRID_TILE_PX[1], max(GRID_TILE_PX[0], 1800 // max(model.n_layers, model.n_heads))))
    return model.n_heads * tile + GRID_MARGINS[0], model.n_layers * tile + GRID_MARGINS[1]


def export_attention(trace: Trace, path: Path, layer: int | str, head: int | str, step: int | None = None,
                     values: str = "weights", log: bool = False, cross: bool = False,
                     size: tuple[int, int] | None = None, theme: str = "light", picture=None,
                     text_scale: float = 1.0, caption: str = "", kind: str | None = None) -> Path:
    """One head, all heads of a layer (`head="all"`) or the full grid (`layer="all"`) to any format;
    images in the figure `theme` (light, print-ready, or dark; see explorer.views.figure_text.FIGURE_COLOURS),
    their text `text_scale` times its size for the image (File ▸ Export Figure Text Size).
    One head's image draws `picture` (figures.head_picture) where it is computed already; `size` None is
    default_size's; an image's `caption` (a frame's step, step_caption) is drawn under the map; its title (a CSV's
    header) names the attention `kind` of a model with more than one (figures.kind_words)."""
    path = Path(path)
    if not trace or not trace.steps:
        raise ExportError(f"Cannot export {path}: there is no trace yet; run the model first.")
    suffix = _suffix(path, IMAGE_SUFFIXES + DATA_SUFFIXES)
    check_writable(path)
    _check_indices(trace, layer, head)
    if suffix in DATA_SUFFIXES:
        if layer == "all":
            raise ExportError(f"Cannot export {path}: raw matrices need one layer, not 'all'.")
        matrix = raw_attention(trace, int(layer), head, step, values, cross)
        heads = "" if head == "all" else f", head {head}"
        return save_matrix(matrix, path, header=f"{kind_words(trace, cross, kind)}{values}, layer {layer}{heads}",
                           labels=token_labels(trace, matrix.shape[-2:], cross))
    size = size or default_size(trace.model, layer, head)
    check_image_size(*size)                         # before anything is drawn (views.image_limits)
    figure = attention_figure(trace, layer, head, size[0], size[1], step, values, log, cross, theme, picture,
                              text_scale, kind)
    if caption:
        add_caption(figure, caption, size, theme)
    try:
        return save_figure(figure, path, *size)
    finally:
        figure.close()
        figure.deleteLater()


def step_caption(trace: Trace, step: int) -> str:
    """What a frame of every step says it shows: "step 3 of 8 · '␣cat'" (the token fed at that step, as the
    tokenizer shows it), "step 0 of 8 · the prompt, 6 tokens" for the prefill."""
    record = trace.steps[step]
    fed = (f"'{short_label(record.token_text[0], 24)}'" if record.n_new == 1 and record.token_text
           else f"the prompt, {plural(record.n_new, 'token')}")
    return f"step {step} of {trace.n_steps - 1} · {fed}"


def add_caption(figure, caption: str, size: tuple[int, int], theme: str) -> None:
    """`caption` on a line of its own under the whole figure, at its title's size, and the figure laid out
    again at `size`: an animation's frames (and the numbered ones) each name their step, where the map alone
    left a viewer to count rows."""
    layout = figure.ci.layout
    title = figure.ci.getItem(0, 0)
    px = text_px(title.item) if hasattr(title, "item") else 14
    with figure_colours(theme):
        figure.addLabel(caption, row=layout.rowCount(), col=0, colspan=max(1, layout.columnCount()), size=f"{px}px")
    lay_out(figure, *size, theme)


def export_frames(trace: Trace, path: Path, layer: int | str, head: int | str, **options) -> list[Path]:
    """'Export every step': `frame.png` becomes frame_0000.png, frame_0001.png, ... one per step, each captioned
    with its step (step_caption)."""
    path = Path(path)
    _suffix(path, IMAGE_SUFFIXES + DATA_SUFFIXES)
    check_writable(path)
    written = []
    for step in range(trace.n_steps):
        frame = path.with_name(f"{path.stem}_{step:04d}{path.suffix}")
        written.append(export_attention(trace, frame, layer, head, step=step, caption=step_caption(trace, step),
                                        **options))
    return written


def save_widget(widget, path: Path, theme: str = "light") -> Path:
    """A panel as it looks on screen, at its size and text size on screen (the app's AS_SHOWN_TIP), in the
    figure `theme`'s colours (explorer.drawing.colours.printed), its plot titles whole (whole_titles): PNG from
    `grab()`, SVG through QSvgGenerator."""
    if _suffix(path, IMAGE_SUFFIXES) == ".png":
        with printed(widget, theme), whole_titles(widget), whole_tables(widget):
            pixmap = widget.grab()

        def write(temporary):
            Path(temporary).write_bytes(png_bytes(pixmap, "the PNG"))
    else:
        def write(temporary):
            from PySide6.QtSvg import QSvgGenerator  # QtSvg loaded only when an SVG is written

            generator = QSvgGenerator()
            generator.setFileName(temporary)
            generator.setTitle(getattr(widget, "title", "panel"))
            with printed(widget, theme), whole_titles(widget), whole_tables(widget):
                generator.setSize(widget.size())            # grown to hold every table whole
                generator.setViewBox(widget.rect())
                widget.render(generator)
            svg = Path(temporary).read_text(encoding="utf-8")
            Path(temporary).write_text(baked_strokes(sharp_images(svg)), encoding="utf-8")
    return atomic_write(path, write)


def _check_indices(trace: Trace, layer, head) -> None:
    model = trace.model
    if layer != "all" and not 0 <= int(layer) < model.n_layers:
        raise ExportError(f"Layer {layer} does not exist: the model has layers 0 to {model.n_layers - 1}.")
    if head != "all" and not 0 <= int(head) < model.n_heads:
        raise ExportError(f"Head {head} does not exist: the model has heads 0 to {model.n_heads - 1}.")
