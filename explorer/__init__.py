"""Transformer Explorer: the exact algebra of a transformer, on your text, one token at a time."""
__version__ = "0.1.0"
