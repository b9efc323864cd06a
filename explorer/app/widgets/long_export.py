"""One head (all heads of a layer, or the full grid) of a long trace exported from the window without freezing it.

The same files as the headless `export` command (figures.export_attention): PNG and SVG draw the head
as block maxima over its real extent, the extent in the title (figures.head_picture), and .npy is the
exact T × T matrix. What costs time runs on a background thread: the picture, taken from the
panel's kept maps (long_maps.ReducedMaps) where it is kept already, or the exact matrix and its file.
The figure itself is laid out on the GUI thread, from the finished picture (a few milliseconds).
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QWidget

from explorer.app.figures import export_dialogs
from explorer.app.widgets.grid_filler import Background
from explorer.core.errors import ExplorerError
from explorer.drawing import export
from explorer.drawing.figures import HeadPicture, Mosaic, grid_picture, head_picture, layer_pictures
from explorer.views.long_maps import Cancelled, extent


class LongExport(QObject):
    """`written(path)` once the file is in place, said in the status bar of the window of its parent
    ("Saved head.png (640×480 px)", export_dialogs.report_saved); `failed(sentence)` if it could not be written;
    `progressed(done, total)` as the full grid's heads come in; `ended()` once it is over (or cancelled)."""

    written = Signal(object)
    failed = Signal(str)
    progressed = Signal(int, int)
    ended = Signal()

    def __init__(self, maps, pause=None, parent: QObject | None = None, tiles=None) -> None:
        super().__init__(parent)
        self.maps = maps                  # the large view's ReducedMaps: a head it shows is not computed again
        self.tiles = tiles                # the grid filler's ReducedMaps: a tile it holds is not computed again
        self.pause = pause                # grid_filler.Holds: the grid waits meanwhile
        self.job = Background(self)
        self.job.done.connect(self._done)
        self._pending: tuple | None = None

    @property
    def running(self) -> bool:
        return self.job.running

    def ask(self, parent, trace, layer: int, head: int | str, raw: bool = False, **options) -> None:
        """The export dialog (offering one head's exact .npy beside its images), then `start`, with the
        text size chosen for exported figures (File ▸ Export Figure Text Size)."""
        target = export_dialogs.ask_attention_target(parent, layer, head, raw, exact=head != "all", trace=trace,
                                                     cross=options.get("cross", False), kind=options.get("kind"))
        if target is not None:
            path, size, theme = target
            options.setdefault("text_scale", export_dialogs.figure_text_scale(parent))
            self.start(trace, path, layer, head, size=size, theme=theme, **options)

    def start(self, trace, path: Path, layer: int | str, head: int | str, step: int | None = None,
              values: str = "weights", log: bool = False, cross: bool = False, size=None,
              theme: str = "light", text_scale: float = 1.0, kind: str | None = None) -> None:
        """Write one head (`head` "all": the layer's heads) to `path` (.png, .svg, .npy or .csv), its
        costly part off the GUI thread; `layer` "all": the full grid (an image); an image's text
        `text_scale` times its size, its title (a CSV's header) naming the attention `kind`
        (export.export_attention)."""
        path = Path(path)
        try:
            suffix = export._suffix(path, export.IMAGE_SUFFIXES + export.DATA_SUFFIXES)
            export.check_writable(path)
        except ExplorerError as error:
            self.failed.emit(str(error))
            return
        options = dict(step=step, values=values, log=log, cross=cross, size=size, theme=theme,
                       text_scale=text_scale, kind=kind)
        self._pending = (trace, path, layer, head, options)
        if layer == "all" and suffix in export.IMAGE_SUFFIXES:
            work = lambda cancelled: grid_picture(trace, step, values, cross, self.tiles,  # noqa: E731
                                                    cancelled, self.progressed.emit)
        elif suffix in export.DATA_SUFFIXES:          # numpy and a file: nothing of Qt, all of it on the thread
            work = lambda cancelled: export.export_attention(trace, path, layer, head, **options)  # noqa: E731
        elif head == "all":
            work = lambda cancelled: layer_pictures(trace, layer, step, values, cross,  # noqa: E731
                                                    self.maps, cancelled)
        else:
            work = lambda cancelled: head_picture(trace, layer, head, step, values, cross,  # noqa: E731
                                                  self.maps, cancelled)
        if self.pause is not None:
            self.pause.hold(self)
        self.job.run(work, name="attention-export")

    def describe(self) -> str:
        """'layer 1, head 2 (8000×8000)': what is being exported."""
        trace, _, layer, head, options = self._pending
        t_q, t_kv = extent(trace, options["step"], options["cross"], 0 if layer == "all" else layer)
        if layer == "all":
            return f"the full grid ({t_q}×{t_kv})"
        return f"layer {layer}, {'all heads' if head == 'all' else f'head {head}'} ({t_q}×{t_kv})"

    def cancel(self) -> None:
        """Stop the export: nothing is written, even by a result already on its way."""
        self.job.cancel()
        self._pending = None
        self._release()
        self.ended.emit()

    def _release(self) -> None:
        if self.pause is not None:
            self.pause.release(self)

    def _done(self, generation: int, result) -> None:
        if generation != self.job.generation or self._pending is None:
            return
        self._release()
        trace, path, layer, head, options = self._pending
        self._pending = None
        self.ended.emit()
        if isinstance(result, Cancelled):
            return
        if isinstance(result, (HeadPicture, list, Mosaic)):     # a head's picture, a layer's, or the grid
            try:
                result = export.export_attention(trace, path, layer, head, picture=result, **options)
            except ExplorerError as error:
                result = error
        if isinstance(result, ExplorerError):
            self.failed.emit(str(result))
        elif isinstance(result, Exception):
            self.failed.emit(f"Could not export {path}: {result}.")
        else:
            if isinstance(self.parent(), QWidget):
                export_dialogs.report_saved(self.parent(), result)
            self.written.emit(result)
