"""``dpinfer --help`` (building the parser of every command) imports no heavy library it does not need.

Each command line start-up pays for what building the parser imports. ``dp_accounting`` (which
imports most of SciPy), ``scipy.stats``, torch, ArviZ and Matplotlib are imported where they are
used (:mod:`dpinfer.deferred`, imports inside functions), and ``dpinfer.release`` only by the
commands that release. Checked in a fresh interpreter; no timing is asserted.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
#: what building the parser must not import
HEAVY = ("dp_accounting", "scipy.stats", "scipy.signal", "torch", "arviz", "matplotlib", "dpinfer.release")


def imported_after(code: str) -> list[str]:
    """The modules of :data:`HEAVY` that a fresh interpreter has imported after running ``code``."""
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    path = os.pathsep.join([str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = dict(os.environ, PYTHONPATH=path)
    proc = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.split()


def test_building_the_parser_imports_no_accounting_library_torch_or_plotting():
    assert imported_after("import dpinfer.cli\ndpinfer.cli.build_parser()") == []
    # known-broken variant: an eager import of the accounting library is caught
    assert "dp_accounting" in imported_after("import dpinfer.cli\nimport dp_accounting")


def test_a_deferred_module_is_imported_at_first_use_and_then_is_the_module():
    code = ("from dpinfer.deferred import DeferredModule\nimport sys\n"
            "stats = DeferredModule('scipy.stats')\nassert 'scipy.stats' not in sys.modules, repr(stats)\n"
            "assert stats.norm.cdf(0.0) == 0.5 and 'scipy.stats' in sys.modules\n"
            "import scipy.stats\nassert stats.norm is scipy.stats.norm and 'not imported' not in repr(stats)")
    assert "scipy.stats" in imported_after(code)
