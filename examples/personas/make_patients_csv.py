"""Write patients.csv: 3000 synthetic patient records (age, bmi, smoker, systolic_bp, outcome)."""
import sys

import numpy as np
import pandas as pd

rng = np.random.default_rng(2026)
n = 3000
age = np.clip(rng.normal(55, 14, n), 18, 90).round()
bmi = np.clip(rng.lognormal(np.log(27), 0.17, n), 16, 50).round(1)
smoker = rng.binomial(1, 0.22, n)
sbp = np.clip(95 + 0.6 * age + 0.7 * (bmi - 27) + 4 * smoker + rng.normal(0, 13, n), 85, 210).round()
eta = -1.0 + 0.04 * (age - 55) + 0.06 * (bmi - 27) + 0.7 * smoker + 0.02 * (sbp - 135)
outcome = rng.binomial(1, 1 / (1 + np.exp(-eta)))
pd.DataFrame({"age": age.astype(int), "bmi": bmi, "smoker": smoker, "systolic_bp": sbp.astype(int),
              "outcome": outcome}).to_csv(sys.argv[1] if len(sys.argv) > 1 else "patients.csv", index=False)
