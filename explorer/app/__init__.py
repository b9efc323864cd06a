"""The desktop app: Qt and pyqtgraph, drawing the numpy trace. Never imports torch."""
