"""Distances with declared sensitivities: MMD (random features, exact), clipped distances."""
