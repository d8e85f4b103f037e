"""The analyst's client: ``dpinfer.connect(url, token)`` and the same result types as local calls.

Example::

    import dpinfer
    svc = dpinfer.connect("https://registry.example:8443", token)   # token from the data owner
    svc.datasets()                                       # names, public schemas, public n
    trial = svc.mean("survey", "bmi", epsilon=0.5, dry_run=True)     # free: the dummy data set
    rel = svc.mean("survey", "bmi", epsilon=0.5)         # a PrivateRelease, as release_records gives
    fit = svc.glm("survey", target="smoker", features=["age", "bmi"], epsilon=1.0, seed=0)
    fit.interval(0.9)                                    # a GLMPosterior, as dpinfer.private_glm gives

What comes back is what the local call returns: :meth:`Client.clamped` (and :meth:`mean`,
:meth:`count`, :meth:`histogram`) a :class:`~dpinfer.privacy.report.PrivateRelease` with
its full :class:`~dpinfer.privacy.PrivacyReport` (mechanism, sensitivity, events, noise scale);
:meth:`Client.glm_release` the :class:`~dpinfer.inference.glm.GLMRelease` of
:func:`~dpinfer.release.glm.release_glm_statistics`, and :meth:`Client.glm` the
:class:`~dpinfer.inference.glm.GLMPosterior` of :func:`dpinfer.private_glm`, computed here from
the release (post-processing; the sampler's seed is yours). ``details`` of a release holds the
request id (:meth:`Client.retrieve` fetches it again), the data set and, for a clamped mean with
Laplace noise, the release file of ``dpinfer release`` (``details["release_file"]``: write it
with :func:`write_release_file` and run ``dpinfer smc-abc --model gaussian-mean --observed FILE``).

Errors are raised as the library's own: :class:`RemoteBudgetError` is a
:class:`~dpinfer.errors.BudgetExceededError`, :class:`RemoteInvalidRequest` an
:class:`~dpinfer.errors.InvalidDataError`; each carries the HTTP status, code and field.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BudgetExceededError, DPInferError, InvalidDataError
from ..inference.glm import GLMPosterior, GLMPrior, GLMRelease, GLMSamplerOptions, glm_posterior
from ..privacy.report import PrivacyReport, PrivateRelease


class RemoteError(DPInferError):
    """A refusal by the service: ``status`` (HTTP), ``code`` and ``field`` from its JSON error."""

    def __init__(self, status: int, code: str, message: str, field: str | None) -> None:
        super().__init__(f"{message} (HTTP {status}, {code}" + (f", field {field!r})" if field else ")"))
        self.status, self.code, self.field, self.message = status, code, field, message


class RemoteBudgetError(RemoteError, BudgetExceededError):
    """The analyst's allowance or the data set's budget cannot cover the request (nothing charged)."""


class RemoteInvalidRequest(RemoteError, InvalidDataError):
    """A request field the service cannot serve (nothing charged)."""


class RemoteTimeout(RemoteError):
    """The request ran past the service's time limit (503). ``request_id`` is None if nothing was
    charged; otherwise the release was charged and is stored: fetch it with :meth:`Client.retrieve`."""

    def __init__(self, status: int, code: str, message: str, field: str | None, request_id: Any) -> None:
        super().__init__(status, code, message, field)
        self.request_id = request_id


class RemoteAuthError(RemoteError):
    """The token was refused (401) or lacks the rights (403)."""


def _raise(resp: Any) -> None:
    try:
        err = resp.json()["error"]
        status, code, message, field = (
            int(err["status"]),
            str(err["code"]),
            str(err["message"]),
            err.get("field"),
        )
    except (ValueError, KeyError, TypeError):
        status, code, message, field = resp.status_code, "http_error", resp.text[:200], None
        err = {}
    if code in ("timeout", "timeout_after_charge"):
        raise RemoteTimeout(status, code, message, field, err.get("request_id"))
    if status == 409:
        raise RemoteBudgetError(status, code, message, field)
    if status in (400, 404, 413, 422):
        raise RemoteInvalidRequest(status, code, message, field)
    if status in (401, 403):
        raise RemoteAuthError(status, code, message, field)
    raise RemoteError(status, code, message, field)


def _release(body: dict[str, Any]) -> PrivateRelease:
    details = {k: v for k, v in body.items() if k not in ("value", "privacy")}
    return PrivateRelease(
        np.asarray(body["value"], dtype=np.float64), PrivacyReport.from_dict(body["privacy"]), details
    )


def write_release_file(release: PrivateRelease, path: str | Path) -> Path:
    """Write a clamped mean's release in the format of ``dpinfer release`` (module docstring)."""
    doc = release.details.get("release_file")
    if doc is None:
        raise InvalidDataError(
            "this release has no release file (only a clamped mean with Laplace noise on a "
            "replace-one data set maps to the gaussian-mean model)."
        )
    p = Path(path)
    p.write_text(json.dumps(doc, indent=2))
    return p


class Client:
    """A connection to a data owner's service (module docstring).

    Parameters
    ----------
    url
        The service's base URL (``https://host:port``).
    token
        Your API token (``dpi_...``), from the data owner.
    timeout
        Seconds to wait for an answer.
    verify
        TLS verification: True, False, or the path of a CA bundle (e.g. the owner's certificate).
    """

    def __init__(self, url: str, token: str, *, timeout: float = 120.0, verify: Any = True) -> None:
        import httpx

        if isinstance(verify, (str, Path)):  # a CA bundle or the owner's certificate
            import ssl

            verify = ssl.create_default_context(cafile=str(verify))
        self.url = url.rstrip("/")
        #: the id and kind of the last release request (``id`` None for a dry run)
        self.last_request: dict[str, Any] = {}
        self._http = httpx.Client(
            base_url=self.url, timeout=timeout, verify=verify, headers={"Authorization": f"Bearer {token}"}
        )

    def __repr__(self) -> str:  # never the token
        return f"Client({self.url!r})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _get(self, path: str) -> Any:
        resp = self._http.get(path)
        if resp.status_code >= 400:
            _raise(resp)
        return resp.json()

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        resp = self._http.post(path, json=body)
        if resp.status_code >= 400:
            _raise(resp)
        return resp.json()

    def _post_release(self, kind: str, body: dict[str, Any]) -> Any:
        """POST a release request of ``kind``; remember its id and whether it was a dry run in
        :attr:`last_request`."""
        out = self._post(f"/v1/releases/{kind}", body)
        self.last_request = {"id": out.get("id"), "dry_run": bool(out.get("dry_run")), "kind": kind}
        return out

    def _send(self, method: str, path: str, body: Any = None) -> Any:
        resp = self._http.request(method, path, json=body)
        if resp.status_code >= 400:
            _raise(resp)
        return resp.json()

    # -- the owner's changes at run time (an owner's token) --------------------------------------
    def analysts(self) -> dict[str, dict[str, float]]:
        """Owner: every analyst and their allowance per data set."""
        return dict(self._get("/v1/owner/analysts")["analysts"])

    def add_analyst(self, name: str, allowances: dict[str, float] | None = None) -> dict[str, Any]:
        """Owner: add an analyst with allowances (audited)."""
        return dict(self._post("/v1/owner/analysts", {"name": name, "allowances": allowances or {}}))

    def set_allowance(self, analyst: str, dataset: str, epsilon: float) -> dict[str, Any]:
        """Owner: set an analyst's allowance on a data set (audited)."""
        return dict(
            self._send("PUT", f"/v1/owner/analysts/{analyst}/allowances/{dataset}", {"epsilon": epsilon})
        )

    def create_token(self, principal: str, *, role: str = "analyst", days: float = 90.0) -> dict[str, Any]:
        """Owner: a new token for ``principal`` (``["token"]`` is shown only here)."""
        return dict(self._post("/v1/owner/tokens", {"principal": principal, "role": role, "days": days}))

    def revoke_token(self, token_id: str) -> dict[str, Any]:
        """Owner: revoke a token at once."""
        return dict(self._send("DELETE", f"/v1/owner/tokens/{token_id}"))

    def rotate_token(self, token_id: str, *, days: float | None = None) -> dict[str, Any]:
        """Owner: revoke a token and get its holder's new one (``["token"]``, shown only here)."""
        return dict(self._post(f"/v1/owner/tokens/{token_id}/rotate", {"days": days}))

    # -- what there is -------------------------------------------------------------------------
    def datasets(self) -> list[dict[str, Any]]:
        """The served data sets: name, neighbouring relation, public n (replace-one) and schema."""
        return list(self._get("/v1/datasets")["datasets"])

    def schema(self, dataset: str) -> dict[str, Any]:
        """The public schema of ``dataset``."""
        return dict(self._get(f"/v1/datasets/{dataset}")["schema"])

    def me(self) -> dict[str, Any]:
        """Your name, role, and per data set your allowance, spend and what remains."""
        return dict(self._get("/v1/me"))

    def history(self) -> list[dict[str, Any]]:
        """Your requests, oldest first (parameters, ε, status)."""
        return list(self._get("/v1/requests")["requests"])

    def retrieve(self, request_id: str) -> Any:
        """A release you made, again (e.g. after a lost connection): the same type as when made."""
        row = self._get(f"/v1/requests/{request_id}")
        if row["result"] is None:
            raise RemoteError(
                404, "not_released", f"request {request_id} has no release (status {row['status']}).", "id"
            )
        body = {"id": row["id"], "kind": row["kind"], "dataset": row["dataset"], **row["result"]}
        if row["kind"] == "glm":
            return GLMRelease.from_dict(body["glm_release"])
        if row["kind"] == "dpvi":
            from ..release.dpvi import DPVIResult

            return DPVIResult.from_dict(body["dpvi_result"])
        if row["kind"] == "covariates":
            from ..models.synthesis import MarginalHistogramModel

            return MarginalHistogramModel.from_dict(body["covariate_model"])
        return _release(body)

    # -- releases ------------------------------------------------------------------------------
    def clamped(
        self,
        dataset: str,
        column: str,
        *,
        epsilon: float,
        statistic: str = "mean",
        lower: float | None = None,
        upper: float | None = None,
        mechanism: str = "laplace",
        delta: float = 0.0,
        count_share: float = 0.5,
        dry_run: bool = False,
        purpose: str = "",
    ) -> PrivateRelease:
        """A clamped mean, sum, or sum and count of ``column``
        (:func:`~dpinfer.privacy.mechanisms.clamped.clamped_release`; bounds default to the schema's)."""
        body = {
            "dataset": dataset,
            "column": column,
            "epsilon": epsilon,
            "statistic": statistic,
            "lower": lower,
            "upper": upper,
            "mechanism": mechanism,
            "delta": delta,
            "count_share": count_share,
            "dry_run": dry_run,
            "purpose": purpose,
        }
        return _release(self._post("/v1/releases/clamped", body))

    def mean(self, dataset: str, column: str, *, epsilon: float, **kwargs: Any) -> PrivateRelease:
        """A clamped mean of ``column`` (:meth:`clamped`)."""
        return self.clamped(dataset, column, epsilon=epsilon, statistic="mean", **kwargs)

    def count(
        self, dataset: str, *, epsilon: float, dry_run: bool = False, purpose: str = ""
    ) -> PrivateRelease:
        """The number of records of an add-remove data set (geometric mechanism)."""
        body = {"dataset": dataset, "epsilon": epsilon, "dry_run": dry_run, "purpose": purpose}
        return _release(self._post("/v1/releases/count", body))

    def histogram(
        self, dataset: str, column: str, *, epsilon: float, dry_run: bool = False, purpose: str = ""
    ) -> PrivateRelease:
        """Noisy counts of each category of ``column`` (``details["labels"]`` names them)."""
        body = {
            "dataset": dataset,
            "column": column,
            "epsilon": epsilon,
            "dry_run": dry_run,
            "purpose": purpose,
        }
        return _release(self._post("/v1/releases/histogram", body))

    def glm_release(
        self,
        dataset: str,
        *,
        target: str,
        features: Sequence[str],
        family: str = "logistic",
        epsilon: float,
        delta: float = 1e-6,
        intercept: bool = True,
        dry_run: bool = False,
        purpose: str = "",
    ) -> GLMRelease:
        """The released GLM statistics (:func:`~dpinfer.release.glm.release_glm_statistics`), bounds
        from the schema."""
        body = {
            "dataset": dataset,
            "target": target,
            "features": list(features),
            "family": family,
            "epsilon": epsilon,
            "delta": delta,
            "intercept": intercept,
            "dry_run": dry_run,
            "purpose": purpose,
        }
        out = self._post_release("glm", body)
        return GLMRelease.from_dict(out["glm_release"])

    def covariate_model(
        self,
        dataset: str,
        *,
        features: Sequence[str],
        epsilon: float,
        bins: int = 20,
        dry_run: bool = False,
        purpose: str = "",
    ) -> Any:
        """A DP product-of-marginals model of ``features`` for synthetic records: the
        :class:`~dpinfer.models.synthesis.MarginalHistogramModel` of
        :func:`~dpinfer.release.synthesis.release_covariate_model` (``fit.synthesize(n, X=model)``)."""
        from ..models.synthesis import MarginalHistogramModel

        body = {
            "dataset": dataset,
            "features": list(features),
            "epsilon": epsilon,
            "bins": bins,
            "dry_run": dry_run,
            "purpose": purpose,
        }
        out = self._post_release("covariates", body)
        return MarginalHistogramModel.from_dict(out["covariate_model"])

    def upload(self, theta: Any = None, sims: Any = None, *, path: str | Path | None = None) -> str:
        """Upload simulations for ABCDP — θ (T, p) and simulated data sets (T, M, d), or the
        ``.npz`` file of ``dpinfer simulate`` (``path``); returns the upload's id (the owner
        validates and stores them, never runs code)."""
        import io

        if path is not None:
            content = Path(path).read_bytes()
        else:
            buf = io.BytesIO()
            np.savez(buf, theta=np.asarray(theta, dtype=np.float64), sims=np.asarray(sims, dtype=np.float64))
            content = buf.getvalue()
        resp = self._http.post(
            "/v1/uploads", content=content, headers={"Content-Type": "application/octet-stream"}
        )
        if resp.status_code >= 400:
            _raise(resp)
        return str(resp.json()["id"])

    def abcdp(
        self,
        dataset: str,
        *,
        upload: str,
        columns: Sequence[str],
        c: int,
        epsilon: float,
        bandwidth: float,
        epsilon_abc: float = 0.0,
        n_features: int = 100,
        feature_seed: int = 0,
        resample: bool = False,
        dry_run: bool = False,
        purpose: str = "",
    ) -> Any:
        """ABCDP on uploaded simulations (:func:`~dpinfer.release.abcdp.abcdp`, Laplace sparse
        vector): the :class:`~dpinfer.release.ABCDPResult` of the local call, read from the
        library's result file the service sends."""
        import base64
        import tempfile

        from ..results.format import load_result

        body = {
            "dataset": dataset,
            "upload": upload,
            "columns": list(columns),
            "c": c,
            "epsilon": epsilon,
            "bandwidth": bandwidth,
            "epsilon_abc": epsilon_abc,
            "n_features": n_features,
            "feature_seed": feature_seed,
            "resample": resample,
            "dry_run": dry_run,
            "purpose": purpose,
        }
        out = self._post_release("abcdp", body)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "abcdp.npz"
            path.write_bytes(base64.b64decode(out["result_file"]))
            return load_result(path)

    def dpvi(
        self,
        dataset: str,
        *,
        target: str,
        features: Sequence[str],
        epsilon: float,
        model: str = "logistic",
        delta: float = 1e-6,
        intercept: bool = True,
        steps: int = 1000,
        sampling_rate: float = 0.05,
        family: str = "auto",
        seed: int | None = None,
        dry_run: bool = False,
        purpose: str = "",
    ) -> Any:
        """A DPVI fit of a built-in model (``"logistic"``, ``"poisson"``, ``"gaussian-linear"``)
        of ``target`` on ``features`` (scaled by their declared bounds; an intercept by default):
        the :class:`~dpinfer.release.dpvi.DPVIResult` of the local
        ``DPVI(model).fit(X, y, epsilon=..., delta=..., data=dpinfer.DataSpec(intercept=..., bounds=...))``.
        ``steps`` is capped by the service; ``seed`` drives only the public Monte Carlo draws."""
        from ..release.dpvi import DPVIResult

        body = {
            "dataset": dataset,
            "target": target,
            "features": list(features),
            "epsilon": epsilon,
            "model": model,
            "delta": delta,
            "intercept": intercept,
            "steps": steps,
            "sampling_rate": sampling_rate,
            "family": family,
            "seed": seed,
            "dry_run": dry_run,
            "purpose": purpose,
        }
        out = self._post_release("dpvi", body)
        return DPVIResult.from_dict(out["dpvi_result"])

    def glm(
        self,
        dataset: str,
        *,
        target: str,
        features: Sequence[str],
        family: str = "logistic",
        epsilon: float,
        delta: float = 1e-6,
        intercept: bool = True,
        dry_run: bool = False,
        prior: GLMPrior | None = None,
        sampler: GLMSamplerOptions | None = None,
        seed: Any = None,
        warn: bool = True,
        purpose: str = "",
    ) -> GLMPosterior:
        """A private GLM: the service releases the statistics, the posterior is computed here
        (:func:`~dpinfer.inference.glm.glm_posterior`): the same type and format as
        :func:`dpinfer.private_glm`."""
        rel = self.glm_release(
            dataset,
            target=target,
            features=features,
            family=family,
            epsilon=epsilon,
            delta=delta,
            intercept=intercept,
            dry_run=dry_run,
            purpose=purpose,
        )
        post = glm_posterior(rel, prior=prior, sampler=sampler, seed=seed, warn=warn)
        post.settings["target"] = target
        post.settings["service"] = {
            "url": self.url,
            "dataset": dataset,
            "request": self.last_request["id"],
            "dry_run": self.last_request["dry_run"],
        }
        return post


def connect(url: str, token: str, **kwargs: Any) -> Client:
    """A :class:`Client` for the service at ``url`` with your ``token`` (module docstring)."""
    return Client(url, token, **kwargs)


__all__ = [
    "Client",
    "RemoteAuthError",
    "RemoteBudgetError",
    "RemoteError",
    "RemoteInvalidRequest",
    "RemoteTimeout",
    "connect",
    "write_release_file",
]
