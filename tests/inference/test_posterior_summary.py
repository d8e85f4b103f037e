"""``InferResult.summary()``'s parameter rows: each to the precision its sd warrants, columns aligned."""

from __future__ import annotations

import numpy as np

from dpinfer.inference.posterior import decimals_for, summary_rows


def test_rows_are_aligned_and_rounded_to_three_significant_digits_of_the_sd() -> None:
    rows = summary_rows(
        ("0-17", "35-54", "rate"),
        np.array([412.5658, 1186.6929, 0.123456]),
        np.array([10.0325, 10.0207, 0.0041]),
        np.array([[392.0888, 432.4682], [1168.3033, 1205.8354], [0.115, 0.131]]),
    )
    assert len({len(r) for r in rows}) == 1  # one width
    assert len({r.index("sd ") for r in rows}) == 1 and len({r.index("95% CI") for r in rows}) == 1
    assert "412.6" in rows[0] and "412.57" not in rows[0]  # counts with sd 10: one decimal
    assert "0.12346" in rows[2] and "0.00410" in rows[2]  # sd 0.004: five decimals
    assert [decimals_for(s) for s in (123.0, 10.0, 1.0, 0.05, 1e-9)] == [0, 1, 2, 4, 6]
    assert decimals_for(0.0) == decimals_for(float("nan")) == 4  # a degenerate sd keeps 4
