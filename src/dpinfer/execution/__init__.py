"""Execution backends (serial, processes, Dask) behind one interface."""
