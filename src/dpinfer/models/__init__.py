"""Models: one module per model (prior + simulator + mechanism, + exact posterior if known)."""
