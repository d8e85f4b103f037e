"""Differentially private variational inference (DPVI)."""
