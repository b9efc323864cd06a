"""The Attention panel's Export menu: the selected head, its layer's heads or the whole grid as a picture, the raw
matrix, every step as frames or an animation, each with the panel's settings (step, values, colour, kind).

A long map's picture or matrix is computed off the GUI thread (long_export.LongExport); a short one goes straight
to the export dialogs (a full grid on its layers' colour scales, as the panel draws it: drawing.grid_legend).
`panel` is the AttentionPanel (its selection, current view, values and log scale).
"""
from __future__ import annotations

from PySide6.QtGui import QAction

from explorer.app.figures import animation as animated
from explorer.app.figures import export_dialogs
from explorer.drawing.figures import kind_option
from explorer.views.long_maps import is_long


def export_actions(panel) -> list[QAction]:
    """The menu's actions, each reading the panel's selection and settings when it is chosen."""
    def settings():
        s, view = panel.session.selection, panel.current_view()
        layer = min(s.layer, view.n_layers - 1)
        model = panel.trace.model if panel.trace is not None else None
        kind = kind_option(model, view.kind)     # titles, CSV headers and file names say which of its kinds
        return (dict(step=view.step, values=panel.values, log=panel.log_scale, cross=view.cross, kind=kind),
                s, view, layer)

    def image(scope):
        options, s, view, layer = settings()
        head = {"head": s.head, "layer": "all", "grid": "all"}[scope]
        if is_long(view.trace, view.step, view.cross):
            return export_long(panel, view, "all" if scope == "grid" else layer, head, False, options)
        export_dialogs.ask_and_export_attention(panel, view.trace, "all" if scope == "grid" else layer, head,
                                                **options)

    def raw():
        options, s, view, layer = settings()
        if is_long(view.trace, view.step, view.cross):
            return export_long(panel, view, layer, s.head, True, options)
        export_dialogs.ask_and_export_attention(panel, view.trace, layer, s.head, raw=True, **options)

    def frames():
        options, s, view, layer = settings()
        options.pop("step")
        export_dialogs.ask_and_export_frames(panel, view.trace, layer, s.head, **options)

    def animation():
        options, s, view, layer = settings()
        options.pop("step")
        animated.ask_and_export_animation(panel, view.trace, layer, s.head, **options)

    specs = [("Export this head as PNG/SVG…", lambda: image("head")),
             ("Export all heads of this layer as PNG/SVG…", lambda: image("layer")),
             ("Export the full grid as PNG/SVG…", lambda: image("grid")),
             ("Export the raw matrix as CSV/NPY…", raw),
             ("Export every step as numbered frames…", frames),
             (f"Export every step as an animation ({animated.formats_label()})…", animation)]
    actions = []
    for text, slot in specs:
        action = QAction(text, panel)
        action.triggered.connect(slot)
        actions.append(action)
    return actions


def offer_steps(action: QAction, trace) -> None:
    """Every step as an animation, offered where there are steps to animate (animation.offer_animation)."""
    animated.offer_animation(action, trace, animated.ENCODER_STEPS)


def export_long(panel, view, layer: int | str, head: int | str, raw: bool, options: dict) -> None:
    """A long head's export (or its layer's): block maxima, or the exact .npy, computed off the GUI thread."""
    long_export = panel.long_export
    long_export.ask(panel, view.trace, layer, head, raw, **options)
    if long_export.running:
        panel.say(f"Exporting {long_export.describe()}…")
