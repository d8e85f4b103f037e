"""The Laplace noise scale of the sparse vector technique (ABCDP, Park et al. 2021, Theorem 1).

One formula, used by the release (:func:`dpinfer.release.abcdp.abcdp`, the SMC-ABC release and the
sparse-vector engine) and by the theory functions of :mod:`dpinfer.diagnostics.flip`.
"""

from __future__ import annotations

__all__ = ["svt_laplace_scale"]


def svt_laplace_scale(c: int, epsilon: float, sensitivity: float, *, resample: bool = False) -> float:
    """The threshold noise scale b = k·Δρ/ε of Algorithm 1 (Theorem 1, eq. (9)).

    ``k = c + 1`` with one threshold draw and ``k = 2c`` when the threshold is redrawn after every
    acceptance (``resample=True``); the threshold noise is Lap(b), the distance noise Lap(2b).
    The formula is symmetric in ``b`` and ``epsilon`` (b·ε = k·Δρ): passing a scale as
    ``epsilon`` gives the ε that scale buys. Pure arithmetic on checked inputs: the callers
    validate ``c``, ``epsilon`` and ``sensitivity``.
    """
    return (2 * c if resample else c + 1) * sensitivity / epsilon
