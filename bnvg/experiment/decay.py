"""Geometric decay (section S5): what multiplying one factor per layer does. Pure arithmetic.

If each layer passes back a fraction f of the gradient it receives, k layers pass back f**k:
a quarter per layer (the sigmoid's best case) leaves 1e-6 after ten layers.
"""

from __future__ import annotations


def remaining(factor: float, layers: int) -> float:
    """The fraction of the gradient left after travelling back `layers` layers."""
    if layers < 0:
        raise ValueError(f"layers must be >= 0, got {layers}")
    return float(factor**layers)
