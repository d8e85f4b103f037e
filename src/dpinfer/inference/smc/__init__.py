"""Adaptive SMC-ABC (Beaumont, Cornuet, Marin & Robert 2009) on privatised statistics."""
