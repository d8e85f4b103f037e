"""The HTTP API of the data owner's service (FastAPI; :func:`create_app`).

Routes (JSON; every one but ``/v1/health`` needs ``Authorization: Bearer <token>``):

=========================================  =========  =================================================
route                                       role       what
=========================================  =========  =================================================
``GET /v1/health``                          none       liveness
``GET /v1/datasets``                        any        served data sets, their public schema and n
``GET /v1/datasets/{name}``                 any        one data set
``GET /v1/me``                              any        who you are; your allowances and spend
``GET /v1/requests``                        analyst    your request history
``GET /v1/requests/{id}``                   analyst    one of your requests with its release
``POST /v1/releases/{kind}``                analyst    ``clamped``, ``count``, ``histogram``, ``glm``,
                                                       ``covariates``, ``abcdp``, ``dpvi``
``POST /v1/uploads``                        analyst    simulations for ABCDP (``.npz``, size-capped)
``GET /v1/owner/overview``                  owner      budgets, spend per analyst, spend over time
``GET /v1/owner/requests``                  owner      every request (no releases' values)
``GET /v1/owner/audit``                     owner      the audit log
``GET/POST /v1/owner/tokens``               owner      list tokens / create one (shown once)
``DELETE /v1/owner/tokens/{id}``            owner      revoke a token
``POST /v1/owner/tokens/{id}/rotate``       owner      revoke a token, give its holder a new one
``GET/POST /v1/owner/analysts``             owner      list analysts / add one with allowances
``PUT /v1/owner/analysts/{a}/allowances/{d}``  owner   set analyst a's allowance on data set d
``GET /owner``                              owner      the owner's web page (:mod:`dpinfer.service.web`)
=========================================  =========  =================================================

Errors are ``{"error": {"status", "code", "field", "message"}}`` with a 4xx status naming the
field at fault (401 token, 403 role or allowance, 404 unknown or someone else's, 409 allowance or
budget exceeded, 413 too large, 422 invalid field, 429 rate limit); nothing is charged for any of
them. The owner's changes at run time (analysts, allowances, tokens) take effect at once and are
each written to the audit log with the owner who made them.

Time limit: a release request runs under ``service.request_timeout`` seconds
(:mod:`dpinfer.service.timeouts`). Past it the answer is **503** (the server could not serve it
within its limit; not 408, which is about a client slow to send its request, nor 504, a gateway's
upstream), field ``request_timeout``: code ``timeout`` if the request had not begun its charge
(nothing charged, ever), or ``timeout_after_charge`` with ``request_id`` if it had: the release
then completes, is stored, and is fetched with ``GET /v1/requests/{id}`` (never charged-and-lost).

An unexpected failure is a 500 that says only that nothing was released; its log line names
the exception's type, never its message (which could carry a value or a path).

Logging: one line per request — method, the route's *template* (never the raw path or query),
status, duration, and the principal's name. No token, data path or value is ever logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import BudgetExceededError, UnsupportedEventError
from .auth import AuthError, Principal, RateLimiter
from .core import Forbidden, NotFound, Service
from .data import FieldError
from .releases import REQUESTS
from .store import AllowanceExceeded
from .timeouts import RequestClock, RequestTimeout

log = logging.getLogger("dpinfer.service")


def error(
    status: int,
    code: str,
    message: str,
    field: str | None = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    body = {"error": {"status": status, "code": code, "field": field, "message": message, **extra}}
    return JSONResponse(body, status_code=status, headers=headers)


class RateLimited(Exception):
    pass


class _TooLarge(Exception):
    pass


class BodyLimit:
    """Refuse request bodies above ``limit`` bytes (413), by header and by counting the stream."""

    def __init__(self, app: Any, limit: int, upload_limit: int | None = None) -> None:
        self.app, self.limit = app, int(limit)
        self.upload_limit = int(upload_limit) if upload_limit is not None else self.limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.upload_limit if scope.get("path") == "/v1/uploads" else self.limit
        for k, v in scope.get("headers", []):
            if k == b"content-length":
                try:
                    too_big = int(v) > limit
                except ValueError:
                    too_big = True
                if too_big:
                    await _send_413(send, limit)
                    return
        seen = 0
        started = False

        async def limited() -> Any:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > limit:
                    raise _TooLarge
            return msg

        async def tracking(msg: Any) -> None:
            nonlocal started
            if msg["type"] == "http.response.start":
                started = True
            await send(msg)

        try:
            await self.app(scope, limited, tracking)
        except _TooLarge:
            if not started:
                await _send_413(send, limit)


async def _send_413(send: Any, limit: int) -> None:
    body = json.dumps(
        {
            "error": {
                "status": 413,
                "code": "too_large",
                "field": "body",
                "message": f"the request body exceeds {limit} bytes.",
            }
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


class AccessLog:
    """One log line per request: method, the route's template (never the raw path), status,
    duration and the principal's name (a plain ASGI wrapper: Starlette's ``@app.middleware``
    costs a task and a stream per request)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = [500]

        async def tracking(msg: Any) -> None:
            if msg["type"] == "http.response.start":
                status[0] = int(msg["status"])
            await send(msg)

        try:
            await self.app(scope, receive, tracking)
        finally:
            state = scope.get("state") or {}
            route = getattr(scope.get("route"), "path", "(no route)")
            log.info(
                "%s %s %d %.1fms by %s",
                scope.get("method", "-"),
                route,
                status[0],
                1000 * (time.perf_counter() - t0),
                state.get("principal", "-") if isinstance(state, dict) else "-",
            )


class TokenRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    principal: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    role: str = Field(default="analyst", pattern="^(owner|analyst)$")
    days: float = Field(default=90.0, gt=0, le=3650)
    note: str = Field(default="", max_length=200)


class RotateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    days: float | None = Field(default=None, gt=0, le=3650)


class AnalystRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    allowances: dict[str, float] = Field(default_factory=dict, max_length=100)


class AllowanceRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    epsilon: float = Field(ge=0, allow_inf_nan=False)


def _field(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p != "body"]
    return ".".join(parts) if parts else "body"


@dataclass(frozen=True)
class _Guards:
    """The routes' dependencies: any token's principal, an analyst's, the owner's."""

    principal: Callable[..., Awaitable[Principal]]
    analyst: Callable[..., Awaitable[Principal]]
    owner: Callable[..., Awaitable[Principal]]


def _guards(service: Service, limiter: RateLimiter) -> _Guards:
    """The dependencies authenticating a request's token (rate-limited by ``limiter``) and its role."""

    # the dependencies are async (cheap: a cached token check and one indexed read), so that a
    # request takes one worker-thread hop (its release), not one per dependency
    async def principal(request: Request) -> Principal:
        who = service.tokens.authenticate(request.headers.get("authorization"))
        request.state.principal = who.name
        if not limiter.allow(who.token_id):
            raise RateLimited
        return who

    async def analyst(who: Principal = Depends(principal)) -> Principal:  # noqa: B008
        if who.role != "analyst":
            raise Forbidden("this route is for analysts' tokens.")
        return who

    async def owner(who: Principal = Depends(principal)) -> Principal:  # noqa: B008
        if who.role != "owner":
            raise Forbidden("this route is for the data owner's tokens.")
        return who

    return _Guards(principal=principal, analyst=analyst, owner=owner)


def create_app(service: Service) -> FastAPI:
    """The FastAPI application serving ``service`` (module docstring)."""
    cfg = service.config
    app = FastAPI(title="dpinfer data owner's service", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.service = service
    guards = _guards(service, RateLimiter(cfg.rate_limit, cfg.rate_burst))
    _add_access_error_handlers(app, cfg.rate_limit)
    _add_release_error_handlers(app)
    _add_fallback_error_handlers(app)
    # logging: a plain ASGI wrapper (AccessLog), added below
    _add_analyst_routes(app, service, guards)
    _add_owner_routes(app, service, guards)

    from .web import add_owner_pages

    add_owner_pages(app, service)
    app.add_middleware(AccessLog)
    app.add_middleware(BodyLimit, limit=cfg.max_request_bytes, upload_limit=cfg.max_upload_bytes)
    return app


def _add_access_error_handlers(app: FastAPI, rate_limit: float) -> None:
    """401 (token), 429 (more than ``rate_limit`` requests per second), 403 (role), 404 (unknown)."""

    @app.exception_handler(AuthError)
    async def _auth(_: Request, exc: AuthError) -> JSONResponse:
        return error(401, "unauthorized", str(exc), "Authorization", {"WWW-Authenticate": "Bearer"})

    @app.exception_handler(RateLimited)
    async def _rate(_: Request, exc: RateLimited) -> JSONResponse:
        return error(
            429,
            "rate_limited",
            f"more than {rate_limit:g} requests per second with this token; retry later.",
            "Authorization",
            {"Retry-After": "1"},
        )

    @app.exception_handler(Forbidden)
    async def _forbidden(_: Request, exc: Forbidden) -> JSONResponse:
        return error(403, "forbidden", str(exc), "Authorization")

    @app.exception_handler(NotFound)
    async def _missing(_: Request, exc: NotFound) -> JSONResponse:
        return error(404, "not_found", str(exc), "id")


def _add_release_error_handlers(app: FastAPI) -> None:
    """422 (invalid field, unsupported release), 409 (allowance, budget), 503 (timeout)."""

    @app.exception_handler(FieldError)
    async def _fielderr(_: Request, exc: FieldError) -> JSONResponse:
        return error(422, "invalid_field", str(exc), exc.field)

    @app.exception_handler(AllowanceExceeded)
    async def _allowance(_: Request, exc: AllowanceExceeded) -> JSONResponse:
        return error(409, "allowance_exceeded", str(exc), "epsilon")

    @app.exception_handler(BudgetExceededError)
    async def _budget(_: Request, exc: BudgetExceededError) -> JSONResponse:
        # the ledger's own message states the data set's total spend (others' activity): not shown
        return error(
            409,
            "budget_exceeded",
            "the data set's budget cannot cover this release. Nothing was charged.",
            "epsilon",
        )

    @app.exception_handler(UnsupportedEventError)
    async def _unsupported(_: Request, exc: UnsupportedEventError) -> JSONResponse:
        return error(
            422,
            "unsupported",
            "this data set's accountant cannot account this kind of release; "
            "choose another mechanism. Nothing was charged.",
            "mechanism",
        )

    @app.exception_handler(RequestTimeout)
    async def _timeout(_: Request, exc: RequestTimeout) -> JSONResponse:
        return error(503, "timeout", str(exc), "request_timeout", {"Retry-After": "1"})


def _add_fallback_error_handlers(app: FastAPI) -> None:
    """Invalid requests (422), Starlette's HTTP errors, and the unexpected failure (500, details withheld)."""

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errs = exc.errors()
        first = errs[0] if errs else {"loc": ("body",), "msg": "invalid request"}
        field = _field(tuple(first.get("loc", ("body",))))
        msg = "; ".join(f"{_field(tuple(e.get('loc', ())))}: {e.get('msg', 'invalid')}" for e in errs[:5])
        return error(422, "invalid_field", msg, field)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error(exc.status_code, code, str(exc.detail), "path")

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("%s %s failed: %s (details withheld)", request.method, _route(request), type(exc).__name__)
        return error(500, "internal", "the service could not complete the request; nothing was released.")


def _add_analyst_routes(app: FastAPI, service: Service, guards: _Guards) -> None:
    """The public and analyst routes (module docstring)."""
    cfg = service.config

    @app.get("/v1/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/datasets")
    def datasets(who: Principal = Depends(guards.principal)) -> dict[str, Any]:  # noqa: B008
        return {"datasets": service.public_datasets()}

    @app.get("/v1/datasets/{name}")
    def dataset(name: str, who: Principal = Depends(guards.principal)) -> dict[str, Any]:  # noqa: B008
        for d in service.public_datasets():
            if d["name"] == name:
                return d
        raise NotFound(f"no data set {name!r} is served here.")

    @app.get("/v1/me")
    def me(who: Principal = Depends(guards.principal)) -> dict[str, Any]:  # noqa: B008
        return service.me(who)

    @app.get("/v1/requests")
    def history(who: Principal = Depends(guards.analyst)) -> dict[str, Any]:  # noqa: B008
        return {"requests": service.history(who)}

    @app.get("/v1/requests/{rid}")
    def request_(rid: str, who: Principal = Depends(guards.analyst)) -> dict[str, Any]:  # noqa: B008
        return service.request(who, rid)

    @app.post("/v1/releases/{kind}")
    async def release(kind: str, request: Request, who: Principal = Depends(guards.analyst)) -> Any:  # noqa: B008
        model = REQUESTS.get(kind)
        if model is None:
            raise NotFound(f"no release kind {kind!r} (kinds: {sorted(REQUESTS)}).")
        raw = await request.body()
        try:
            payload = json.loads(raw or b"null")
        except ValueError:
            return error(422, "invalid_field", "the request body is not JSON.", "body")
        if not isinstance(payload, dict):
            return error(422, "invalid_field", "the request body must be a JSON object.", "body")
        try:
            req = model.model_validate(payload)
        except ValidationError as exc:
            raise RequestValidationError(exc.errors()) from None
        return await _limited(service, who, kind, req, cfg.request_timeout)

    @app.post("/v1/uploads")
    async def upload(request: Request, who: Principal = Depends(guards.analyst)) -> Any:  # noqa: B008
        raw = await request.body()
        from starlette.concurrency import run_in_threadpool

        return await run_in_threadpool(service.add_upload, who, raw)


def _add_owner_routes(app: FastAPI, service: Service, guards: _Guards) -> None:
    """The owner's routes under ``/v1/owner`` (module docstring)."""

    @app.get("/v1/owner/overview")
    def overview(who: Principal = Depends(guards.owner)) -> dict[str, Any]:  # noqa: B008
        return service.overview()

    @app.get("/v1/owner/requests")
    def all_requests(who: Principal = Depends(guards.owner)) -> dict[str, Any]:  # noqa: B008
        return {"requests": service.all_requests()}

    @app.get("/v1/owner/audit")
    def audit(who: Principal = Depends(guards.owner)) -> dict[str, Any]:  # noqa: B008
        return {"audit": service.store.audit_log()}

    @app.get("/v1/owner/tokens")
    def tokens(who: Principal = Depends(guards.owner)) -> dict[str, Any]:  # noqa: B008
        return {"tokens": service.tokens.listing()}

    @app.post("/v1/owner/tokens")
    def create_token(body: TokenRequest, who: Principal = Depends(guards.owner)) -> dict[str, Any]:  # noqa: B008
        return service.create_token(who, body.principal, body.role, body.days, body.note)

    @app.delete("/v1/owner/tokens/{tid}")
    def revoke_token(tid: str, who: Principal = Depends(guards.owner)) -> dict[str, Any]:  # noqa: B008
        return service.revoke_token(who, tid)

    @app.post("/v1/owner/tokens/{tid}/rotate")
    def rotate_token(tid: str, body: RotateRequest, who: Principal = Depends(guards.owner)) -> dict[str, Any]:  # noqa: B008
        return service.rotate_token(who, tid, body.days)

    @app.get("/v1/owner/analysts")
    def analysts(who: Principal = Depends(guards.owner)) -> dict[str, Any]:  # noqa: B008
        return {"analysts": service.store.analysts()}

    @app.post("/v1/owner/analysts")
    def add_analyst(body: AnalystRequest, who: Principal = Depends(guards.owner)) -> dict[str, Any]:  # noqa: B008
        return service.add_analyst(who, body.name, body.allowances)

    @app.put("/v1/owner/analysts/{name}/allowances/{dataset}")
    def set_allowance(
        name: str,
        dataset: str,
        body: AllowanceRequest,
        who: Principal = Depends(guards.owner),  # noqa: B008
    ) -> dict[str, Any]:
        return service.set_allowance(who, name, dataset, body.epsilon)


#: releases still running after their timeout answer (kept referenced until they end)
_BACKGROUND: set[asyncio.Future[Any]] = set()


def _settle(task: asyncio.Future[Any]) -> None:
    _BACKGROUND.discard(task)
    if not task.cancelled() and task.exception() is not None:  # retrieved: never logged with details
        log.info("a timed-out request ended: %s", type(task.exception()).__name__)


async def _limited(service: Service, who: Principal, kind: str, req: Any, limit: float) -> Any:
    """Run one release in a worker thread under its :class:`RequestClock` (module docstring)."""
    from starlette.concurrency import run_in_threadpool

    clock = RequestClock(limit)
    task = asyncio.ensure_future(run_in_threadpool(service.release, who, kind, req, clock=clock))
    try:
        return await asyncio.wait_for(asyncio.shield(task), timeout=max(clock.deadline - time.monotonic(), 0))
    except asyncio.TimeoutError:
        _BACKGROUND.add(task)
        task.add_done_callback(_settle)
        if clock.cancel():  # it had not begun its charge, and now never will
            return error(503, "timeout", str(RequestTimeout(limit)), "request_timeout", {"Retry-After": "1"})
        return error(
            503,
            "timeout_after_charge",
            f"the request ran past this service's time limit of {limit:g} s (service.request_timeout) "
            f"after its charge: the release completes and is stored with request {clock.rid}; fetch it "
            f"with GET /v1/requests/{clock.rid}.",
            "request_timeout",
            request_id=clock.rid,
        )


def _route(request: Request) -> str:
    route = request.scope.get("route")
    return getattr(route, "path", "(no route)")


__all__ = ["create_app", "error"]
