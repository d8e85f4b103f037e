"""The data owner's service: analysts get private releases over HTTP, never the data or the budget.

* :mod:`~dpinfer.service.config` — the configuration file (data sets, ledger, analysts, limits);
* :mod:`~dpinfer.service.data` — public schemas, the records, the public dummy data set;
* :mod:`~dpinfer.service.store` — tokens, analysts and their allowances (set by the owner, also
  while the service runs), requests with their releases, the audit log;
* :mod:`~dpinfer.service.auth` — Argon2-hashed API tokens and per-token rate limits;
* :mod:`~dpinfer.service.releases` — declarative requests (clamped mean/sum, count, histogram,
  GLM statistics, DPVI of the built-in models, covariate model, ABCDP), planned from public
  facts, charged through the ledger by the library's own release functions;
* :mod:`~dpinfer.service.uploads` — analysts' simulations for ABCDP: parsed without pickle,
  validated, size-capped, stored per analyst, never executed;
* :mod:`~dpinfer.service.timeouts` — per-request time limits: nothing charged on a timeout
  before the charge, the release stored and retrievable after it;
* :mod:`~dpinfer.service.core` — the service without HTTP; :mod:`~dpinfer.service.app` — the
  HTTP API; :mod:`~dpinfer.service.web` — the owner's page; :mod:`~dpinfer.service.server` —
  ``dpinfer serve``;
* :mod:`~dpinfer.service.client` — :func:`dpinfer.connect`, the analyst's client.

Needs the ``server`` extra (FastAPI, uvicorn, argon2-cffi, httpx).
"""
