import pandas as pd

import dpinfer.release.synthesis  # binds dpinfer too: private_glm, ReleaseContext, DataSpec

df = pd.read_csv("patients.csv")  # 3000 records: age, bmi, smoker, systolic_bp, outcome
ledger = dpinfer.privacy.Ledger("budget.db", create=True)  # one SQLite file: refuses any overspend
if "patients" not in ledger.datasets():  # a budget is registered once, never reset or raised
    ledger.register("patients", epsilon=1.3, delta=1e-5, accountant="rdp")  # posterior 1 + covariates 0.3
charged = dpinfer.ReleaseContext(ledger=ledger, dataset="patients")  # where each release is charged
X = df.drop(columns="outcome")  # public bounds, from the domain (never from the data):
bounds = {"age": (18, 90), "bmi": (15, 50), "smoker": (0, 1), "systolic_bp": (80, 220)}
fit = dpinfer.private_glm(X, df["outcome"], family="logistic", epsilon=1.0, delta=1e-6,
                          context=charged, seed=0, data=dpinfer.DataSpec(bounds=bounds))
print(fit.summary(), list(fit.to_arviz().posterior.data_vars), sep="\n")
covariates = dpinfer.release.synthesis.release_covariate_model(  # DP marginals of X
    X, bounds=list(bounds.values()), epsilon=0.3, integer=[True, False, True, True], context=charged)
print(fit.synthesize(3000, X=covariates, seed=0).to_csv("synthetic.csv"), ledger.remaining("patients"))
