"""Attention figures and the exports (PNG, SVG, CSV, NPY) drawn from them."""
