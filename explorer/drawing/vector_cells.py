"""Heat maps drawn as vector cells in an SVG.

pyqtgraph's SVGExporter writes an ImageItem as an embedded raster the size of the matrix (17 × 17
pixels for 17 tokens), which librsvg draws blurred when scaled up and ImageMagick not at all. While an
SVG is written, the maps of a figure of at most MAX_VECTOR_CELLS cells in all are drawn instead as one
rectangle per run of equal colours in a row: sharp at any zoom, and readable by any SVG reader. Past that,
each map is one embedded PNG (RasterCells) placed exactly on its cells, each cell a block of whole pixels
drawn without smoothing (image-rendering: pixelated), while the axes, labels and colour bar stay vector:
a layer's nine heads at 256 tokens were 124,000 rectangles, 13.9 MB, which librsvg took ~10 s to draw.

The rectangles are written straight in page coordinates, each with its own fill: a VectorCells hands
pyqtgraph's exporter (through its generateSvg hook) a placeholder group, and `cells_in` puts the
rectangles' text in its place. Painted through QSvgGenerator and corrected one by one in pyqtgraph's XML DOM,
the cells of a 53-token map took 0.5 s on an idle machine (2.7 s on a busy one) and those of 256 tokens two
minutes; written as text, milliseconds, and the SVG costs about what the PNG does.

Qt's SVG generator writes the rest (rotated text inside a rotated <g> at an offset, the colour bar's
frame) in forms ImageMagick's own reader (MSVG) does not draw; page_coordinates rewrites them into the
plainest form every SVG reader draws, and applies rectangular clips to the rectangles they hold.
"""
from __future__ import annotations

import base64
import math
import re
from contextlib import contextmanager
from xml.dom import minidom

import numpy as np
import pyqtgraph as pg
from pyqtgraph.exporters.SVGExporter import itemTransform
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRectF
from PySide6.QtGui import QColor, QImage, QPainter, QTransform
from PySide6.QtWidgets import QGraphicsItem, QGraphicsPixmapItem

# The cells of a figure's maps drawn as rectangles at most, all maps together: a rectangle costs ~110 bytes and
# librsvg ~80 us (124k of them: 13.9 MB, ~10 s), so a 128 x 128 map, or a layer's nine heads of 42 tokens, stay
# under ~2 MB and ~1.5 s at worst (equal neighbours share a rectangle, a causal mask's half is none). Past it a
# map is a PNG of its cells, which costs about what the PNG export does.
MAX_VECTOR_CELLS = 128 * 128
MAX_RASTER_SIDE = 4096          # px of a map's embedded PNG at most, however many page px its cells cover


def _pixels(image: QImage) -> np.ndarray:
    """The ARGB32 image as a (height, width) array of 0xAARRGGBB integers."""
    image = image.convertToFormat(QImage.Format.Format_ARGB32)
    stride = image.bytesPerLine() // 4
    rows = np.frombuffer(image.constBits(), dtype=np.uint32, count=stride * image.height())
    return rows.reshape(image.height(), stride)[:, : image.width()].copy()


def cell_runs(pixels: np.ndarray) -> list[tuple[int, int, int, int]]:
    """(row, start, stop, argb) of each run of equal pixels along each row, transparent runs left out."""
    height, width = pixels.shape
    if not pixels.size:
        return []
    starts = np.ones(pixels.shape, dtype=bool)
    starts[:, 1:] = pixels[:, 1:] != pixels[:, :-1]
    rows, cols = np.nonzero(starts)
    flat = rows * width + cols
    stops = np.append(flat[1:], height * width)
    stops = np.where(stops // width == rows, stops % width, width)     # the next run's start, or the row's end
    colours = pixels[rows, cols]
    kept = (colours >> 24) != 0                       # transparent (a masked cell): nothing drawn
    return list(zip(rows[kept].tolist(), cols[kept].tolist(), stops[kept].tolist(), colours[kept].tolist()))


class VectorCells(QGraphicsItem):
    """The pixels of one image item's rendered picture as filled rectangles, in its coordinates.

    `page`: the exporter's map from scene to page coordinates (export_transform), for generateSvg."""

    def __init__(self, image: QImage, width: float, height: float, page: QTransform) -> None:
        super().__init__()
        self.pixels = _pixels(image)
        self.size = (float(width), float(height))          # the item's extent in its own coordinates
        self.page = page
        self.name, self.svg = "", ""                      # its group's id and rectangles, once generateSvg ran

    def boundingRect(self) -> QRectF:
        return QRectF(0, 0, *self.size)

    def _cell_size(self) -> tuple[float, float]:
        return self.size[0] / self.pixels.shape[1], self.size[1] / self.pixels.shape[0]

    def paint(self, painter: QPainter, *_args) -> None:
        cell_w, cell_h = self._cell_size()
        painter.setPen(pg.QtCore.Qt.PenStyle.NoPen)
        for y, start, stop, argb in cell_runs(self.pixels):
            painter.fillRect(QRectF(start * cell_w, y * cell_h, (stop - start) * cell_w, cell_h),
                             QColor.fromRgba(argb))

    def generateSvg(self, nodes: dict):           # the name pyqtgraph's SVGExporter calls on an item
        """A placeholder group named as the exporter names groups, with the rectangles' text kept in `svg` for
        cells_in; NotImplementedError (the exporter then paints the item) where the cells are not axis-aligned."""
        _update_views(self)
        to_page = itemTransform(self, self.scene()) * self.page
        if to_page.m12() or to_page.m21():
            raise NotImplementedError("rotated cells")
        name = next(f"VectorCells_{i}" for i in range(1, len(nodes) + 2) if f"VectorCells_{i}" not in nodes)
        group = minidom.parseString(f'<g id="{name}"><cells/></g>').documentElement
        nodes[name] = group
        self.name, self.svg = name, self._rects(to_page)
        return group, []

    def _rects(self, to_page: QTransform) -> str:
        cell_w, cell_h = self._cell_size()
        sx, sy, dx, dy = to_page.m11(), to_page.m22(), to_page.dx(), to_page.dy()
        opacity = self.effectiveOpacity()
        out = []
        for y, start, stop, argb in cell_runs(self.pixels):
            x0, x1 = sorted((sx * start * cell_w + dx, sx * stop * cell_w + dx))   # a negative scale (the colour
            y0, y1 = sorted((sy * y * cell_h + dy, sy * (y + 1) * cell_h + dy))    # bar's upward axis) flips them
            alpha = (argb >> 24) / 255 * opacity
            out.append(f'<rect x="{x0:.6g}" y="{y0:.6g}" width="{x1 - x0:.6g}" height="{y1 - y0:.6g}" '
                       f'fill="#{argb & 0xFFFFFF:06x}" fill-opacity="{alpha:.6g}" stroke="none"/>')
        return "\n".join(out)


class RasterCells(VectorCells):
    """The pixels of one image item as one embedded PNG over exactly its cells' page rectangle, each cell a block
    of k x k pixels (k: the page px a cell covers, rounded up) so that even a reader that smooths keeps a cell's
    colour to its edge, and image-rendering pixelated for those that honour it."""

    def _rects(self, to_page: QTransform) -> str:
        height, width = self.pixels.shape
        sx, sy, dx, dy = to_page.m11(), to_page.m22(), to_page.dx(), to_page.dy()
        x0, x1 = sorted((dx, sx * self.size[0] + dx))
        y0, y1 = sorted((dy, sy * self.size[1] + dy))
        pixels = self.pixels[::-1 if sy < 0 else 1, ::-1 if sx < 0 else 1]     # a flipped axis flips the picture
        kx = max(1, min(math.ceil((x1 - x0) / width), MAX_RASTER_SIDE // width))
        ky = max(1, min(math.ceil((y1 - y0) / height), MAX_RASTER_SIDE // height))
        opacity = self.effectiveOpacity()
        faded = f' opacity="{opacity:.6g}"' if opacity < 1 else ""
        data = base64.b64encode(_png(np.repeat(np.repeat(pixels, ky, axis=0), kx, axis=1))).decode("ascii")
        return (f'<image x="{x0:.6g}" y="{y0:.6g}" width="{x1 - x0:.6g}" height="{y1 - y0:.6g}" '
                f'preserveAspectRatio="none" image-rendering="pixelated" style="image-rendering:pixelated"{faded} '
                f'xlink:href="data:image/png;base64,{data}"/>')


def _png(pixels: np.ndarray) -> bytes:
    """A (height, width) array of 0xAARRGGBB integers as PNG bytes."""
    pixels = np.ascontiguousarray(pixels, dtype=np.uint32)
    image = QImage(pixels.data, pixels.shape[1], pixels.shape[0], 4 * pixels.shape[1], QImage.Format.Format_ARGB32)
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    buffer.close()
    return bytes(data)


def _update_views(item: QGraphicsItem) -> None:
    """Bring the view transforms above `item` up to date: a ViewBox resized (a layer's rows evened out after its
    first layout) maps its children afresh only when it is next painted, and the cells of a layer's top row of
    tiles were placed by the map of the size before (nine rows drawn in the height of eight)."""
    parent = item.parentItem()
    while parent is not None:
        if isinstance(parent, pg.ViewBox):
            parent.updateMatrix()
        parent = parent.parentItem()


def _picture_of(item) -> tuple[QImage, float, float] | None:
    """An image item's picture and its extent in its own coordinates: a heat map (ImageItem) or a colour
    bar's gradient (ColorBarItem draws a QGraphicsPixmapItem)."""
    if not item.isVisible():
        return None
    if isinstance(item, pg.ImageItem):
        if item.image is None:
            return None
        if item.qimage is None:
            item.render()
        return None if item.qimage is None else (item.qimage, item.width(), item.height())
    if isinstance(item, QGraphicsPixmapItem) and not item.pixmap().isNull():
        return item.pixmap().toImage(), item.pixmap().width(), item.pixmap().height()
    return None


def export_transform(root, width: float, height: float) -> QTransform:
    """Scene to page coordinates as pyqtgraph's SVGExporter maps them when it exports `root` at width × height
    (SVGExporter._generateItemSvg: scaled to the size asked, less the root's scene position)."""
    bounds = root.boundingRect()
    position = root.scenePos()
    return QTransform(width / bounds.width(), 0, 0, height / bounds.height(), -position.x(), -position.y())


_PLACEHOLDER = re.compile(r'<g id="(VectorCells_\d+)">\s*<cells\s*/>\s*</g>')


@contextmanager
def vector_cells(figure, width: float, height: float):
    """While inside, every visible image item of `figure` is hidden and drawn by a VectorCells beside it (same
    parent, transform and depth), or, its maps past MAX_VECTOR_CELLS cells in all, each map by a RasterCells (a
    colour bar stays vector), for an SVG export of figure.ci at width × height. Yields `cells_in(svg)`: the
    exported text with each placeholder replaced by its cells."""
    page = export_transform(figure.ci, width, height)
    pictures = [(item, found) for item in figure.scene().items()
                if (found := _picture_of(item)) is not None and not found[0].isNull()]
    map_cells = sum(found[0].width() * found[0].height() for item, found in pictures if isinstance(item, pg.ImageItem))
    raster = map_cells > MAX_VECTOR_CELLS
    swapped = []
    for item, found in pictures:
        cells = (RasterCells if raster and isinstance(item, pg.ImageItem) else VectorCells)(*found, page)
        cells.setParentItem(item.parentItem())
        cells.setTransform(item.transform())
        cells.setPos(item.pos())
        cells.setZValue(item.zValue())
        item.setVisible(False)
        swapped.append((item, cells))

    def cells_in(svg: str) -> str:
        written = {cells.name: cells.svg for _, cells in swapped if cells.name}
        return _PLACEHOLDER.sub(lambda m: f'<g id="{m.group(1)}">\n{written.get(m.group(1), "")}\n</g>', svg)

    try:
        yield cells_in
    finally:
        for item, cells in swapped:
            cells.setParentItem(None)
            if cells.scene() is not None:
                cells.scene().removeItem(cells)
            item.setVisible(True)


_NUMBER = r"-?[0-9.]+(?:e-?[0-9]+)?"
_MATRIX = re.compile(r'\stransform="matrix\(' + ",".join([f"({_NUMBER})"] * 6) + r'\)"')
_FILLED_GROUP = re.compile(r'<g ([^>]*\bfill="(#[0-9a-fA-F]{6})"[^>]*)>((?:\s*<rect [^>]*/>)+)\s*</g>')
_TEXT_GROUP = re.compile(r'<g ([^>]*)>((?:\s*<text [^>]*>[^<]*</text>)+)\s*</g>')
_RECT = re.compile(r'<rect ([^>]*)/>')
_ATTRIBUTE = r'\b{}="([^"]*)"'


def _attribute(tag: str, name: str, default: str = "") -> str:
    found = re.search(_ATTRIBUTE.format(name), tag)
    return found.group(1) if found else default


def _matrix(attributes: str) -> tuple[float, ...] | None:
    """(a, b, c, d, e, f) of a transform="matrix(...)": page = (a x + c y + e, b x + d y + f)."""
    found = _MATRIX.search(attributes)
    return None if found is None else tuple(float(v) for v in found.groups())


def _page_rects(group: re.Match) -> str:
    """An axis-aligned group of filled unit rectangles as rectangles in page units, each with its fill."""
    attributes, fill, rects = group.groups()
    matrix = _matrix(attributes) or (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
    a, b, c, d, e, f = matrix
    if b or c:                                       # a rotated cell: no such thing in a heat map; leave it
        return group.group(0)
    opacity = _attribute(attributes, "fill-opacity", "1")
    out = []
    for rect in _RECT.findall(rects):
        x, y = (float(_attribute(rect, k, "0")) for k in ("x", "y"))
        w, h = (float(_attribute(rect, k, "0")) for k in ("width", "height"))
        x0, x1 = sorted((a * x + e, a * (x + w) + e))          # a negative scale (the colour bar's
        y0, y1 = sorted((d * y + f, d * (y + h) + f))          # upward axis) flips the corners
        out.append(f'<rect x="{x0:.6g}" y="{y0:.6g}" width="{x1 - x0:.6g}" height="{y1 - y0:.6g}" '
                   f'fill="{fill}" fill-opacity="{opacity}" stroke="none"/>')
    return "\n".join(out)


def _anchored_text(group: re.Match) -> str:
    """Rotated text: each <text> carries translate(anchor) rotate(angle) and sits at (0, 0), so that a
    reader that mishandles an offset inside a rotated group still puts it at its anchor on the page."""
    attributes, texts = group.groups()
    matrix = _matrix(attributes)
    if matrix is None or not matrix[1]:
        return group.group(0)
    a, b, c, d, e, f = matrix
    angle = math.degrees(math.atan2(b, a))

    def anchor(text: re.Match) -> str:
        tag = text.group(1)
        x, y = float(_attribute(tag, "x", "0")), float(_attribute(tag, "y", "0"))
        px, py = a * x + c * y + e, b * x + d * y + f
        tag = re.sub(r'\b(x|y)="[^"]*"', lambda m: f'{m.group(1)}="0"', tag)
        return f'<text transform="translate({px:.6g},{py:.6g}) rotate({angle:.6g})" {tag}>'

    return "<g " + _MATRIX.sub("", attributes) + ">" + re.sub(r"<text ([^>]*)>", anchor, texts) + "</g>"


_CLIP_RECT = re.compile(r'<clipPath id="([^"]+)">\s*<path [^>]*\bd="M({0}),({0}) L({0}),\3 L\4,({0}) L\2,\5 L\2,\3 ?"'
                        .format(_NUMBER))
_CLIPPED = re.compile(r'<g clip-path="url\(#([^)]+)\)">')
_PAGE_RECT = re.compile(r'<rect x="([^"]+)" y="([^"]+)" width="([^"]+)" height="([^"]+)" (fill="#)')


def _group_end(svg: str, start: int) -> int:
    """The index just past the </g> that closes the <g> opened at `start`."""
    depth = 0
    for tag in re.finditer(r"<g\b|</g>", svg[start:]):
        depth += 1 if tag.group(0) != "</g>" else -1
        if depth == 0:
            return start + tag.end()
    return len(svg)


def _clip_to(box: tuple[float, ...], body: str) -> str:
    """The page rectangles of `body` cut to the box (x0, y0, x1, y1); one wholly outside it dropped."""
    def cut(rect: re.Match) -> str:
        x, y, w, h = (float(v) for v in rect.groups()[:4])
        x0, y0, x1, y1 = max(x, box[0]), max(y, box[1]), min(x + w, box[2]), min(y + h, box[3])
        if x1 <= x0 or y1 <= y0:
            return '<rect x="0" y="0" width="0" height="0" ' + rect.group(5)
        return f'<rect x="{x0:.6g}" y="{y0:.6g}" width="{x1 - x0:.6g}" height="{y1 - y0:.6g}" ' + rect.group(5)
    return _PAGE_RECT.sub(cut, body)


def _unclipped(svg: str) -> str:
    """A rectangular clip around nothing but rectangles, applied to them instead: MSVG draws nothing at
    all inside a clip-path. Clips around curves or text stay."""
    boxes = {m.group(1): tuple(float(m.group(i)) for i in (2, 3, 4, 5)) for m in _CLIP_RECT.finditer(svg)}
    out, at = [], 0
    for clip in _CLIPPED.finditer(svg):
        if clip.start() < at or clip.group(1) not in boxes:
            continue
        end = _group_end(svg, clip.start())
        body = svg[clip.end():end]
        if set(re.findall(r"<(\w+)", body)) <= {"g", "rect"}:
            out += [svg[at:clip.start()], "<g>", _clip_to(boxes[clip.group(1)], body)]
            at = end
    return "".join(out) + svg[at:]


def page_coordinates(svg: str) -> str:
    """`svg` with every filled rectangle in page coordinates with its own fill attribute, rotated text
    anchored on the page, and rectangular clips of rectangles applied (see the module docstring)."""
    return _unclipped(_TEXT_GROUP.sub(_anchored_text, _FILLED_GROUP.sub(_page_rects, svg)))


_STROKED_GROUP = re.compile(r'<g ([^>]*?)\stransform="matrix\(([^)]*)\)"([^>]*)>((?:\s*<(?:polyline|path|rect) '
                            r'[^>]*vector-effect="non-scaling-stroke"[^>]*/>)+)\s*</g>')
_PAIR = re.compile(f"({_NUMBER}),({_NUMBER})")


def _baked(match: re.Match) -> str:
    """One group of non-scaling strokes with its matrix applied to their points, and no transform left."""
    a, b, c, d, e, f = (float(v) for v in match.group(2).split(","))

    def point(pair: re.Match) -> str:
        x, y = float(pair.group(1)), float(pair.group(2))
        return f"{a * x + c * y + e:.6g},{b * x + d * y + f:.6g}"

    def shape(element: re.Match) -> str:
        tag = element.group(0)
        if tag.startswith("<rect"):
            x, y = float(_attribute(tag, "x", "0")), float(_attribute(tag, "y", "0"))
            w, h = float(_attribute(tag, "width", "0")), float(_attribute(tag, "height", "0"))
            corners = " ".join(point(_PAIR.match(f"{px},{py}")) for px, py in ((x, y), (x + w, y), (x + w, y + h),
                                                                                 (x, y + h)))
            return f'<polygon fill="none" points="{corners}"/>'
        tag = re.sub(r'\b(points|d)="([^"]*)"', lambda m: f'{m.group(1)}="{_PAIR.sub(point, m.group(2))}"', tag)
        return tag.replace(' vector-effect="non-scaling-stroke"', "")

    body = re.sub(r"<(?:polyline|path|rect) [^>]*/>", shape, match.group(4))
    return f"<g {match.group(1)}{match.group(3)}>{body}\n</g>"


def baked_strokes(svg: str) -> str:
    """`svg` (Qt's QSvgGenerator's, a panel as shown on screen) with each group of cosmetic strokes drawn in page
    coordinates: Qt writes a plot's lines in the plot's own units under the view's matrix with
    vector-effect="non-scaling-stroke", which librsvg and ImageMagick ignore, so a 2 px line under a 32 x 0.4
    scale came out as a band 64 px wide, and the selection's outline as a filled bar (SmolLM2's residual stream
    and Q / K / V, seen opening the window's exports)."""
    if "non-scaling-stroke" not in svg:
        return svg
    unsafe = re.compile(r"[a-zA-Z]")
    def bake(match: re.Match) -> str:
        paths = re.findall(r'\bd="([^"]*)"', match.group(4))
        if any(set(unsafe.findall(d)) - {"M", "L", "C", "Z", "e"} for d in paths):   # relative or arc commands
            return match.group(0)
        return _baked(match)
    return _STROKED_GROUP.sub(bake, svg)


_SCALED_IMAGE = re.compile(r'(<g [^>]*?\stransform="matrix\([^)]*\)"[^>]*>\s*<image [^>]*?'
                           r'xlink:href="data:image/png;base64,)([^"]+)"')
MAX_BLOCK_PX = 32               # a map's cell drawn as a block of at most this many px a side in the PNG


def sharp_images(svg: str) -> str:
    """`svg` (Qt's QSvgGenerator's, a panel as shown on screen) with each raster drawn scaled up (a heat map of
    9 x 30 cells, one pixel a cell, drawn under a 22 x 10 matrix) made of blocks of whole pixels, one a cell:
    librsvg smooths a scaled image whatever its image-rendering says, and the head atlas's 270 cells came out as
    blobs (drive29). A raster drawn at its own size is left as it is."""
    def sharpen(match: re.Match) -> str:
        a, b, c, d, _e, _f = _matrix(match.group(1)) or (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
        image = QImage.fromData(base64.b64decode(match.group(2)), "PNG")
        side = max(image.width(), image.height(), 1)
        block = min(int(max(math.hypot(a, b), math.hypot(c, d))), MAX_BLOCK_PX, MAX_RASTER_SIDE // side)
        if image.isNull() or block < 2:
            return match.group(0)
        pixels = np.repeat(np.repeat(_pixels(image), block, axis=0), block, axis=1)
        return match.group(1) + base64.b64encode(_png(pixels)).decode("ascii") + '"'
    return _SCALED_IMAGE.sub(sharpen, svg)
