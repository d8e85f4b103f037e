"""The result contract every method honours and its one file format (:mod:`.format`)."""

from .format import PosteriorResult, ResultFile, load_result

__all__ = ["PosteriorResult", "ResultFile", "load_result"]
