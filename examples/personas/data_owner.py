import pandas as pd

import dpinfer
from dpinfer.release.synthesis import release_covariate_model

df = pd.read_csv("patients.csv")  # 3000 records: age, bmi, smoker, systolic_bp, outcome
ledger = dpinfer.privacy.Ledger("budget.db", create=True)  # one SQLite file: refuses any overspend
if "patients" not in ledger.datasets():  # a budget is registered once, never reset or raised
    ledger.register("patients", epsilon=1.3, delta=1e-5, accountant="rdp")  # posterior 1 + covariates 0.3
X = df.drop(columns="outcome")  # public bounds, from the domain (never from the data):
bounds = {"age": (18, 90), "bmi": (15, 50), "smoker": (0, 1), "systolic_bp": (80, 220)}
fit = dpinfer.private_glm(X, df["outcome"], family="logistic", epsilon=1.0, delta=1e-6,
                          ledger=ledger, dataset="patients", seed=0, data=dpinfer.GLMDataSpec(bounds=bounds))
print(fit.summary(), list(fit.to_arviz().posterior.data_vars), sep="\n")
covariates = release_covariate_model(X, bounds=list(bounds.values()), epsilon=0.3,  # DP marginals of X
                                     integer=[True, False, True, True], ledger=ledger, dataset="patients")
print(fit.synthesize(3000, X=covariates, seed=0).to_csv("synthetic.csv"), ledger.remaining("patients"))
