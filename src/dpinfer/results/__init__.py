"""The result contract every method honours and its one file format (:mod:`.format`), and the
synthetic records a released posterior gives (:mod:`.synthetic`)."""

from .format import PosteriorResult, ResultFile, load_result
from .synthetic import SyntheticData

__all__ = ["PosteriorResult", "ResultFile", "SyntheticData", "load_result"]
