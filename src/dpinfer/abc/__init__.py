"""Approximate Bayesian computation: rejection ABC, ABCDP (private), SMC-ABC."""
