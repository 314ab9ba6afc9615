"""Jupyter views of tslab values (imported only when used: ``tslab`` itself never imports this package)."""

from .replay import ReplayPlayer

__all__ = ["ReplayPlayer"]
