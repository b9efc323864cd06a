"""The engine: torch + numpy, never Qt."""
