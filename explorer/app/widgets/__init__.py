"""The pieces the panels are built from: text and plot widgets, layouts, the model-call helper, the long-map
grid filler and each panel's sub-views. A widget never imports a panel (an import-linter contract), so a
panel's parts can be shared and tested without the dock it sits in; `explorer.app.panels` holds one module
per dock panel and their common base.
"""
