"""Demo section: ABCDP on the COVID-19 Netherlands counts (paper Fig. 4), private and not."""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import NonPrivateResultWarning
from .context import DemoContext

DATASET = "covid-nl"


def section_abcdp(ctx: DemoContext) -> None:
    """COVID polynomial model, c = 5: ABCDP at ε_total = 44 next to non-private rejection ABC."""
    from ..datasets.abcdp_data import load_covid_nl
    from ..diagnostics import flip_probability
    from ..distances import ExactMMD, median_heuristic
    from ..models.shipped.covid import CovidPolynomial
    from ..plots import plot_covid_fit
    from ..privacy.context import ReleaseContext
    from ..release.abcdp import abcdp
    from ..release.draws import ArrayDraws, SimulatedDraws
    from ..release.rejection import rejection_abc_draws

    days, observed = load_covid_nl()
    model = CovidPolynomial()
    n_draws = 10_000 if ctx.quick else 50_000
    c, eps_total, eps_abc = 5, 44.0, 0.05
    draws = SimulatedDraws(model.prior_sample, model.simulate, n_draws, seed=ctx.seed, batch_size=2048)
    thetas, sims = draws.materialize()  # public: the modeler's simulations
    bandwidth = median_heuristic(sims[:500], seed=ctx.seed)  # simulated data only, never the observed
    distance = ExactMMD(bandwidth)
    ctx.ledger.register(DATASET, epsilon=eps_total, accountant="pure")
    res = abcdp(
        observed, ArrayDraws(thetas, sims, 2048), distance, c=c, epsilon_total=eps_total,
        epsilon_abc=eps_abc,
        context=ReleaseContext(ledger=ctx.ledger, dataset=DATASET, label="ABCDP COVID c=5"),
        param_names=model.param_names,
    )
    with warnings.catch_warnings():  # the non-private reference: labelled so in the report's rows
        warnings.simplefilter("ignore", NonPrivateResultWarning)
        ref = rejection_abc_draws(observed, ArrayDraws(thetas, sims, 2048), distance, eps_abc, max_accept=c)

    def rmse(theta: np.ndarray) -> float:
        return float(np.sqrt(np.mean((model.curve(theta)[0] - observed) ** 2)))

    panels = []
    for title, r in (("non-private rejection ABC", ref), (f"ABCDP, ε_total = {eps_total:g}", res)):
        mean_curve = model.curve(r.posterior_mean)[0]
        panels.append({"title": title, "curves": model.curve(r.accepted), "mean_curve": mean_curve})
        ctx.report.add_row(
            "ABCDP", title, "RMSE of posterior-mean curve (cases)", rmse(r.posterior_mean),
            eps_total if r is res else "inf",
            f"{r.n_accepted} accepted of {r.n_draws} draws examined (T={n_draws})",
        )
    path = ctx.out_dir / "abcdp_covid.png"
    plot_covid_fit(panels, days, observed, path)
    ctx.report.add_figure("ABCDP on COVID-19 NL (cf. paper Fig. 4)", path)
    ctx.report.add_row(
        "ABCDP", "theory", "flip probability rho=0.3, eps_abc=0.2, b=0.1",
        float(flip_probability(0.3, 0.2, 0.1)), "-", "paper/authors' value 0.34304",
    )
    ctx.report.add_row(
        "ABCDP", "ledger", f"epsilon spent on {DATASET!r}", ctx.ledger.spent(DATASET), eps_total,
        f"b = {res.b:.4g} (Theorem 1, N = 18, Δρ = 2/18), bandwidth {bandwidth:.4g} from simulations",
    )
    ctx.report.add_text("ABCDP (COVID-19 NL, c = 5)", "```\n" + res.summary() + "\n```")
    print(res.summary())
