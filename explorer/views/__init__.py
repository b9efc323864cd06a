"""Views of a Trace as pure functions: numpy and explorer.core.trace only, never Qt, never torch.

What turns a recorded run into something to draw lives here, once: which attention
a view shows (trace_views), one head's matrix and its tick labels (maps), the
layer × head mosaic (grid). The app's panels, its exports, the command line and
the Python API's `show()` all call these, so they draw the same numbers.
"""
