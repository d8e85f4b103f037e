import numpy as np

import dpinfer
from dpinfer.models import LaplaceMechanism, PrivateDataModel, UniformPrior


def weekly_cases(theta, rng, K=10_000):  # theta: (m, 2) = (R0, recoveries per week) -> 12 weeks
    S, I, cases = np.full(len(theta), K - 10), np.full(len(theta), 10), []
    for _ in range(12):  # chain-binomial SIR, one step per week; the week's new cases are reported
        new = rng.binomial(S, 1 - np.exp(-theta[:, 0] * theta[:, 1] * I / K))
        S, I, cases = S - new, I + new - rng.binomial(I, 1 - np.exp(-theta[:, 1])), cases + [new]
    return np.stack(cases, axis=1).astype(float)


laplace = LaplaceMechanism(stat_dim=12, sensitivity=1, epsilon=1.0, neighbouring="add-remove")  # 1 case
model = PrivateDataModel(UniformPrior([1, 0.3], [5, 1.5]), weekly_cases, laplace, param_names=["R0", "gamma"])
released = laplace.release(weekly_cases(np.array([[2.5, 0.7]]), np.random.default_rng(1))[0]).value  # agency
post = dpinfer.infer(model, released, method="smc-abc", seed=0)  # "auto" warned: see README
print(post.summary(), "\nR0 95% credible interval:", post.interval(0.95)[0].round(2))
post.plot("r0_posterior.png")
