"""The models shipped with dpinfer (the papers' examples), and the registry of their names."""
