"""How a model load shares its progress bar: the loaders read the files up to READY_AT of it, and what is left is
making the model (runtime.load_model). A leaf module, so that a loader and the package that names the loaders do
not import each other."""
from __future__ import annotations

from typing import Callable

Progress = Callable[[float, str], None]
READY_AT = 0.95         # of a load's bar once the files are read: what is left is making the model (runtime)
