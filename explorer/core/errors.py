"""Errors a person can act on: one sentence naming the file or value and the problem.

The command line prints them and exits with status 2; the app shows them in a
dialog and keeps its previous state.
"""


class ExplorerError(Exception):
    """A failure caused by the user's input (a file, a value), not by a bug."""


class ModelLoadError(ExplorerError):
    """A model file or folder could not be loaded."""


class UnsupportedModelError(ModelLoadError):
    """The model is readable but of an architecture or format we do not run."""


class ContextOverflowError(ExplorerError):
    """The prompt plus the requested steps do not fit the model's context."""


class InvalidConfigError(UnsupportedModelError):
    """A config value outside what any model can mean (zero heads, a NaN epsilon, an unknown activation)."""


class NonFiniteError(ExplorerError):
    """A weight, or a forward pass's result, holds NaN or Inf: the numbers shown would be meaningless."""


class TokenizerError(ExplorerError):
    """The tokenizer failed on a text (a panic inside the tokenizers library, or a pattern that never ends)."""
