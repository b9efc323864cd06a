"""Drawing: the heat map, its axes, the figures and the files they are written to, in Qt and pyqtgraph.

Between the views of a trace (numpy) and the two that draw them, the app and the CLI: both draw an
attention map with the same Heatmap and write it with the same exporters, so an exported figure is the
panel's. Never the app (no window, dialog or settings) and never torch.
"""
