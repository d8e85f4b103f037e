"""Accountants: one interface (:class:`Accountant`), a registry (:func:`get_accountant`)."""

from .advanced import AdvancedCompositionAccountant, act
from .base import Accountant, available_accountants, get_accountant, register_accountant
from .pld import PLDAccountant
from .pure import PureAccountant
from .rdp import RDPAccountant

__all__ = [
    "Accountant",
    "AdvancedCompositionAccountant",
    "PLDAccountant",
    "PureAccountant",
    "RDPAccountant",
    "act",
    "available_accountants",
    "get_accountant",
    "register_accountant",
]
