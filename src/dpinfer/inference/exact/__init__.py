"""The exact private-data posterior when the mechanism has a density, and reference baselines."""
