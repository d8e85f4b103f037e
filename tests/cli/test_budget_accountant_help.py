"""``dpinfer budget init --help`` says truthfully which accountant accounts DPVI (issue 35, item 6c).

DPVI's default is replace-one Poisson subsampling. The help used to say ``rdp`` accounts DPVI
("the same, more loosely") while the RDP accountant refused that event; it now lists pld and rdp
for DPVI's default batches, says that a release without a tight analysis is composed through a
valid bound that its report states, and keeps pure away from DPVI. The claims are checked against
the accountants themselves; the old text is the known-broken variant.
"""

from __future__ import annotations

from dpinfer.cli.budget import ACCOUNTANT_HELP
from dpinfer.privacy.accountants import get_accountant
from dpinfer.privacy.events import LaplaceEvent, PoissonSubsampledGaussianEvent

OLD_HELP = (
    "pld | rdp | pure | advanced: how charges are composed; budgets cannot be changed later, "
    "so pick one that accounts every "
    "release you will make: pld (default) accounts all of them (Laplace, ABCDP's sparse vector, "
    "Gaussian, DPVI's DP-SGD) at --delta > 0; rdp the same, more loosely; pure only pure-DP releases "
    "(Laplace, ABCDP; not DPVI) at --delta 0; advanced: advanced composition of pure releases"
)

#: DPVI's default release: Poisson batches, replace-one (``dpinfer dpvi`` without options)
DPVI_DEFAULT = PoissonSubsampledGaussianEvent(0.05, 1.0, 1000, neighbouring="replace-one")


def help_problems(text: str) -> list[str]:
    """What the --accountant help gets wrong or leaves out about DPVI's default batches."""
    flat = " ".join(text.split())
    problems = []
    if "pld (default) and rdp" not in flat or "replace-one Poisson" not in flat:
        problems.append("does not list pld and rdp for DPVI's default replace-one Poisson batches")
    if "bound" not in flat or "report states the bound" not in flat:
        problems.append(
            "does not say that a release without a tight analysis is composed through a "
            "bound that its report states"
        )
    if "more loosely" in flat:
        problems.append("calls rdp 'the same, more loosely' (it needs a bound for DPVI's default)")
    if "not the Gaussian releases nor DPVI" not in flat:
        problems.append("does not keep pure away from DPVI and the Gaussian releases")
    return problems


def test_the_help_lists_the_accountants_of_dpvi_and_the_bound():
    assert help_problems(ACCOUNTANT_HELP) == []


def test_the_old_help_is_caught():
    assert len(help_problems(OLD_HELP)) == 4


def test_the_accountants_agree_with_the_help():
    assert get_accountant("pld").supports(DPVI_DEFAULT)
    assert not get_accountant("pure").supports(DPVI_DEFAULT)
    assert get_accountant("pure").supports(LaplaceEvent(1.0))


def test_rdp_accounts_dpvis_default_batches():
    assert get_accountant("rdp").supports(DPVI_DEFAULT)
