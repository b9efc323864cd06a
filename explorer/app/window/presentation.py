"""View ▸ Presentation: for a projector in a classroom, larger text in high contrast and one panel, the
one in focus, over the whole window; off again, the text, the colours and the layout as they were.

The panel shown is one that draws something (`presented_dock`): with the focus in the prompt editor (where it
is right after launch) or in no panel, the prompt over the whole window was an empty text box, so the panel the
person last looked at (last held the focus) is shown instead, else attention's map.

A projector is often 1366×768 and read from the back of the room: the application's font grows by
FONT_SCALE, and the other panels are hidden (dock_shares' maximise) so that the one shown keeps plots
large enough to read at that size. A projector also washes colours out, so every text of the palette
is drawn in high contrast (`high_contrast`): pure black on white (or white on black in a dark theme),
and every other text role at a WCAG contrast of at least 7:1 (level AAA) against its background.
"""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QApplication, QDockWidget, QWidget
from shiboken6 import isValid

from explorer.app.window import dock_layout
from explorer.app.window.dock_shares import in_sight, seen

FONT_SCALE = 1.4
Role = QPalette.ColorRole
# (background, foreground, placeholder, link, highlight, highlighted text); each text at >= 7:1 on its
# background: the placeholder 8.4:1 and the link 12.9:1 on white, the highlight 16:1 (light; dark alike)
HIGH_CONTRAST = {"light": ("#ffffff", "#000000", "#4d4d4d", "#0000b0", "#000080", "#ffffff"),
                 "dark": ("#000000", "#ffffff", "#b3b3b3", "#80c0ff", "#ffff00", "#000000")}


def scaled(font: QFont, scale: float) -> QFont:
    """`font` `scale` times larger, whether it is sized in points or in pixels."""
    bigger = QFont(font)
    if font.pointSizeF() > 0:
        bigger.setPointSizeF(font.pointSizeF() * scale)
    else:
        bigger.setPixelSize(round(font.pixelSize() * scale))
    return bigger


def high_contrast(palette: QPalette) -> QPalette:
    """`palette` with its texts in high contrast, light or dark as `palette`'s window is. Disabled texts keep
    their own (dimmer) colours: they must look unavailable, and WCAG does not count them."""
    theme = "dark" if palette.color(Role.Window).lightness() < 128 else "light"
    background, foreground, placeholder, link, highlight, highlighted = (QColor(c) for c in HIGH_CONTRAST[theme])
    colours = {Role.Window: background, Role.Base: background, Role.AlternateBase: background,
               Role.Button: background, Role.ToolTipBase: background, Role.WindowText: foreground,
               Role.Text: foreground, Role.ButtonText: foreground, Role.ToolTipText: foreground,
               Role.BrightText: foreground, Role.PlaceholderText: placeholder, Role.Link: link,
               Role.LinkVisited: link, Role.Highlight: highlight, Role.HighlightedText: highlighted}
    contrasted = QPalette(palette)
    for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive):
        for role, colour in colours.items():
            contrasted.setColor(group, role, colour)
    return contrasted


def dock_of(window, widget: QWidget | None) -> QDockWidget | None:
    """The dock of `window` holding `widget`, or None."""
    if widget is None:
        return None
    return next((dock for dock in window.findChildren(QDockWidget) if dock.isAncestorOf(widget)), None)


def presented_dock(window, last_seen: QDockWidget | None = None) -> QDockWidget:
    """The dock Presentation shows: the one holding the focus, unless that is the prompt editor's or there is
    none; then `last_seen` (the last panel that held the focus) while it is still in sight (not closed, nor a tab
    behind another since: Presentation showed an Experiments tab the person no longer saw), else attention's."""
    prompt = window.docks.get("prompt")
    in_focus = dock_of(window, QApplication.focusWidget())
    if in_focus is not None and in_focus is not prompt:
        return in_focus
    if last_seen is not None and seen(last_seen) and last_seen is not prompt:
        return last_seen
    return window.docks.get("attention") or next(d for d in window.docks.values() if d is not prompt)


class Presentation(QObject):
    def __init__(self, window) -> None:
        super().__init__(window)            # a child: the focus connection goes with the window
        self.window = window
        self.last_seen: QDockWidget | None = None       # the last dock other than the prompt's to hold the focus
        QApplication.instance().focusChanged.connect(self._on_focus_changed)
        self.font_before: QFont | None = None
        self.palette_before: QPalette | None = None
        self.palette_set: QPalette | None = None
        self.sizes_before: dict[QDockWidget, QSize] = {}    # the docks in sight before, and their sizes
        self.window_before = QSize()                        # the window's size then

    def _on_focus_changed(self, _old: QWidget | None, now: QWidget | None) -> None:
        docks = getattr(self.window, "docks", None)         # none yet while the window builds them
        dock = dock_of(self.window, now) if docks else None
        if dock is not None and dock is not docks.get("prompt"):
            self.last_seen = dock

    @property
    def on(self) -> bool:
        return self.font_before is not None

    def set_on(self, on: bool) -> None:
        if on == self.on:
            return
        if on:
            self._turn_on()
        else:
            self._turn_off()
        dock_layout.keep_on_screen(self.window)

    def _turn_on(self) -> None:
        app, shares = QApplication.instance(), self.window.dock_shares
        self.font_before, self.palette_before = QFont(app.font()), QPalette(app.palette())
        app.setFont(scaled(self.font_before, FONT_SCALE))
        self.palette_set = high_contrast(self.palette_before)
        app.setPalette(self.palette_set)
        if shares.maximised is None:
            self.sizes_before = {dock: dock.size() for dock in self.window.findChildren(QDockWidget) if in_sight(dock)}
            self.window_before = self.window.size()
            shares.toggle_maximised(presented_dock(self.window, self.last_seen))

    def _turn_off(self) -> None:
        app, shares = QApplication.instance(), self.window.dock_shares
        app.setFont(self.font_before)
        # Qt posts the font change: delivered now, the panels hidden under the one shown measure again at
        # the normal font before they come back; else, shown with the large font's sizes, they made the
        # window a few px taller than a 1366x768 screen, and it never shrank back.
        QApplication.sendPostedEvents(None, QEvent.Type.ApplicationFontChange)
        if app.palette() == self.palette_set:         # else a theme was chosen meanwhile: it stays
            app.setPalette(self.palette_before)
        self.font_before = self.palette_before = self.palette_set = None
        if shares.maximised is not None:
            shares.toggle_maximised(shares.maximised[0])
            self._give_sizes_back()

    def _give_sizes_back(self) -> None:
        """The docks shown again at the sizes they had before: a dock hidden under the one shown measures its
        title at the normal font only once shown, so the restore gave the prompt the large font's least
        height (86 -> 92 px after launch, then taken as its laid-out height)."""
        QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)     # measured at the normal font now
        kept = [(dock, size) for dock, size in self.sizes_before.items() if isValid(dock) and in_sight(dock)]
        window_before, self.sizes_before = self.window_before, {}
        if kept and self.window.size() == window_before:        # resized meanwhile: Qt's shares (dock_shares)
            docks = [dock for dock, _ in kept]
            self.window.resizeDocks(docks, [size.height() for _, size in kept], Qt.Orientation.Vertical)
            self.window.resizeDocks(docks, [size.width() for _, size in kept], Qt.Orientation.Horizontal)
