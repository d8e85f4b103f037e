"""Diagnostics: flip probability and error bounds (ABCDP), C2ST, MMD and KS metrics."""
