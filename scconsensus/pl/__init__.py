"""Plotting: Scanpy-style figures of ensembles and consensus results."""

__all__: list[str] = []
