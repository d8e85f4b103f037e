import numpy as np

import dpinfer
from dpinfer.models import GammaPrior, GaussianMechanism, PrivateDataModel

released = [412, 958, 1187, 806, 391]  # five age-band counts, as published with discrete Gaussian noise
census = GaussianMechanism.known(sigma=10, stat_dim=5, discrete=True, sensitivity=1)  # sigma published


def true_counts(theta, rng):  # theta: (m, 5) the true counts themselves (continuous, rounded)
    return np.round(theta)


bands = ["0-17", "18-34", "35-54", "55-74", "75+"]
model = PrivateDataModel(GammaPrior([1.0] * 5, [0.001] * 5), true_counts, census, param_names=bands)
post = dpinfer.infer(model, released, seed=0)  # exact tempered SMC: the noise has a density
print(post.summary())
post.plot("census_counts.png")
