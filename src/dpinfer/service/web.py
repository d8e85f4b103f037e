"""The data owner's web page: data sets, budgets, spend per analyst over time, audit log, tokens.

Server-rendered HTML (no script). ``GET /owner/login`` shows a form; posting an *owner* token
opens a session (a random id in an ``HttpOnly``, ``SameSite=Strict`` cookie, kept in memory for
8 hours, re-checked against the token's revocation and expiry on every page). The page draws the
spend of each analyst on each data set over time as an inline SVG (cumulative ε under the data
set's accountant after each request), lists the audit log, and manages tokens: create (the new
token is shown once, on the answer page) and revoke.

Every value on the page is public to the owner (budgets, spends, names, request parameters): no
record, no data path and no token secret (beyond the one just created) is ever rendered.
"""

from __future__ import annotations

import html
import secrets
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from fastapi import FastAPI, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from .auth import AuthError, Principal
from .core import Service

SESSION_COOKIE = "dpinfer_owner"
SESSION_SECONDS = 8 * 3600
COLOURS = ("#1b6ca8", "#d1495b", "#2e933c", "#edae49", "#6a4c93", "#00798c", "#8d6a9f", "#3d405b")

_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.5em 0; }
td, th { border: 1px solid #bbb; padding: 0.25em 0.6em; }
th { background: #eee; text-align: left; } .num { text-align: right; font-variant-numeric: tabular-nums; }
.token { font-family: monospace; background: #ffd; padding: 0.4em; border: 1px solid #cc9; }
"""


def _e(value: Any) -> str:
    return html.escape(str(value))


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(float(ts), tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def spend_svg(timeline: list[dict[str, Any]], width: int = 640, height: int = 260) -> str:
    """An inline SVG of cumulative spend per (analyst, data set) against time (module docstring)."""
    pad_l, pad_r, pad_t, pad_b = 60, 170, 20, 40
    series: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for p in timeline:
        series.setdefault((p["analyst"], p["dataset"]), []).append((float(p["at"]), float(p["spent"])))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="spend-plot" width="{width}" height="{height}" '
        f'role="img" aria-label="spend per analyst over time">',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>',
    ]
    x0, x1, y0, y1 = pad_l, width - pad_r, height - pad_b, pad_t
    parts.append(f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="#444"/>')
    parts.append(f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="#444"/>')
    parts.append(
        f'<text x="{(x0 + x1) / 2}" y="{height - 8}" text-anchor="middle" font-size="12">time</text>'
    )
    parts.append(
        f'<text x="14" y="{(y0 + y1) / 2}" font-size="12" transform="rotate(-90 14 {(y0 + y1) / 2})" '
        'text-anchor="middle">epsilon spent</text>'
    )
    if not series:
        parts.append(
            f'<text x="{(x0 + x1) / 2}" y="{(y0 + y1) / 2}" text-anchor="middle" font-size="13">'
            "no releases yet</text></svg>"
        )
        return "".join(parts)
    ts = [t for pts in series.values() for t, _ in pts]
    tmin, tmax = min(ts), max(ts)
    tmax = tmax if tmax > tmin else tmin + 1.0
    ymax = max(s for pts in series.values() for _, s in pts) or 1.0
    ymax *= 1.1

    def sx(t: float) -> float:
        return x0 + (t - tmin) / (tmax - tmin) * (x1 - x0)

    def sy(s: float) -> float:
        return y0 - s / ymax * (y0 - y1)

    for k in range(5):
        v = ymax * k / 4
        parts.append(
            f'<text x="{x0 - 6}" y="{sy(v) + 4:.1f}" text-anchor="end" font-size="11">{v:.2g}</text>'
        )
    for i, ((analyst, ds), pts) in enumerate(sorted(series.items())):
        colour = COLOURS[i % len(COLOURS)]
        steps = []
        prev = 0.0
        for t, s in pts:  # a step plot: spend jumps at each release
            steps += [(sx(t), sy(prev)), (sx(t), sy(s))]
            prev = s
        steps.append((x1, sy(prev)))
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in steps)
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>')
        ly = y1 + 16 * i + 8
        parts.append(f'<rect x="{x1 + 10}" y="{ly - 8}" width="12" height="4" fill="{colour}"/>')
        parts.append(f'<text x="{x1 + 26}" y="{ly - 2}" font-size="11">{_e(analyst)} / {_e(ds)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _page(title: str, body: str) -> HTMLResponse:
    return HTMLResponse(
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
        f"<style>{_STYLE}</style></head><body>{body}</body></html>",
        headers={
            "Cache-Control": "no-store",
            "X-Frame-Options": "DENY",
            "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
        },
    )


def render_owner_page(
    service: Service, who: Principal, new_token: dict[str, Any] | None = None
) -> HTMLResponse:
    """The owner's page (module docstring)."""
    ov = service.overview()
    out = [
        f"<h1>dpinfer service: data owner</h1><p>Signed in as <b>{_e(who.name)}</b>. "
        "<form method='post' action='/owner/logout' style='display:inline'>"
        "<button>Sign out</button></form></p>"
    ]
    if new_token:
        out.append(
            f"<p id='new-token'>New token for <b>{_e(new_token['principal'])}</b> ({_e(new_token['role'])}), "
            f"shown once; copy it now:</p><p class='token'>{_e(new_token['token'])}</p>"
        )
    out.append(
        "<h2>Data sets and budgets</h2><table id='datasets'><tr><th>data set</th><th>served</th>"
        "<th>accountant</th><th class='num'>budget ε</th><th class='num'>δ</th><th class='num'>spent ε</th>"
        "<th class='num'>remaining ε</th></tr>"
    )
    for d in ov["datasets"]:
        out.append(
            f"<tr><td>{_e(d['name'])}</td><td>{'yes' if d['served'] else 'no: ' + _e(d['problem'])}</td>"
            f"<td>{_e(d['accountant'])}</td><td class='num'>{d['epsilon']:.4g}</td>"
            f"<td class='num'>{d['delta']:.2g}</td><td class='num'>{d['spent']:.4g}</td>"
            f"<td class='num'>{max(d['epsilon'] - d['spent'], 0):.4g}</td></tr>"
        )
    out.append(
        "</table><h2>Analysts</h2><table id='analysts'><tr><th>analyst</th><th>data set</th>"
        "<th class='num'>allowance ε</th><th class='num'>spent ε</th></tr>"
    )
    for a in ov["analysts"]:
        out.append(
            f"<tr><td>{_e(a['analyst'])}</td><td>{_e(a['dataset'])}</td>"
            f"<td class='num'>{a['allowance']:.4g}</td><td class='num'>{a['spent']:.4g}</td></tr>"
        )
    out.append("</table><h2>Spend per analyst over time</h2>")
    out.append(spend_svg(ov["timeline"]))
    out.append(
        "<h2>Requests</h2><table id='requests'><tr><th>time</th><th>analyst</th><th>data set</th>"
        "<th>kind</th><th class='num'>ε</th><th>status</th></tr>"
    )
    for r in service.all_requests()[-50:][::-1]:
        out.append(
            f"<tr><td>{_when(r['created'])}</td><td>{_e(r['analyst'])}</td><td>{_e(r['dataset'])}</td>"
            f"<td>{_e(r['kind'])}</td><td class='num'>{r['epsilon']:.4g}</td><td>{_e(r['status'])}</td></tr>"
        )
    out.append(
        "</table><h2>Audit log</h2><table id='audit'><tr><th>time</th><th>actor</th><th>action</th>"
        "<th>detail</th></tr>"
    )
    for a in service.store.audit_log(100):
        out.append(
            f"<tr><td>{_when(a['at'])}</td><td>{_e(a['actor'])}</td><td>{_e(a['action'])}</td>"
            f"<td>{_e(a['detail'])}</td></tr>"
        )
    out.append(
        "</table><h2>Tokens</h2><table id='tokens'><tr><th>id</th><th>holder</th><th>role</th>"
        "<th>expires</th><th>state</th><th></th></tr>"
    )
    now = time.time()
    for t in service.tokens.listing():
        state = "revoked" if t["revoked"] else ("expired" if float(t["expires"]) <= now else "active")
        button = (
            f"<form method='post' action='/owner/tokens/{_e(t['id'])}/revoke'><button>Revoke</button></form>"
            if state == "active"
            else ""
        )
        out.append(
            f"<tr><td>{_e(t['id'])}</td><td>{_e(t['principal'])}</td><td>{_e(t['role'])}</td>"
            f"<td>{_when(t['expires'])}</td><td>{state}</td><td>{button}</td></tr>"
        )
    out.append(
        "</table><h3>New token</h3><form method='post' action='/owner/tokens' id='new-token-form'>"
        "holder <input name='principal' required pattern='[A-Za-z0-9][A-Za-z0-9_.-]*'> "
        "role <select name='role'><option>analyst</option><option>owner</option></select> "
        "days <input name='days' value='90' size='4'> <button>Create</button></form>"
    )
    return _page("dpinfer: data owner", "".join(out))


def _login_page(message: str = "", status: int = 200) -> HTMLResponse:
    """The sign-in page, with ``message`` (escaped) above the form and HTTP ``status``."""
    note = f"<p style='color:#a00'>{_e(message)}</p>" if message else ""
    page = _page(
        "dpinfer: sign in",
        "<h1>dpinfer service: data owner</h1>"
        + note
        + "<form method='post' action='/owner/login'>owner token <input type='password' name='token' "
        "size='60' autocomplete='off'> <button>Sign in</button></form>",
    )
    page.status_code = status
    return page


def add_owner_pages(app: FastAPI, service: Service) -> None:
    """Add ``/owner`` (and its login, logout and token forms) to ``app``."""
    sessions: dict[str, tuple[str, float]] = {}

    def session(request: Request) -> Principal | None:
        sid = request.cookies.get(SESSION_COOKIE)
        entry = sessions.get(sid or "")
        if entry is None or entry[1] < time.time():
            return None
        who = service.tokens.active(entry[0])
        return who if who is not None and who.role == "owner" else None

    _add_sign_in_routes(app, service, sessions)
    _add_owner_page_routes(app, service, session)


def _add_sign_in_routes(app: FastAPI, service: Service, sessions: dict[str, tuple[str, float]]) -> None:
    """``/owner/login`` (the form, and signing in: a new session in ``sessions``) and ``/owner/logout``."""

    @app.get("/owner/login", response_class=HTMLResponse)
    def login_form() -> HTMLResponse:
        return _login_page()

    @app.post("/owner/login", response_model=None)
    def login(request: Request, token: str = Form(default="", max_length=200)) -> Response:
        try:
            who = service.tokens.authenticate(f"Bearer {token}")
        except AuthError as exc:
            return _login_page(str(exc), 401)
        if who.role != "owner":
            return _login_page("this page is for the data owner's tokens.", 403)
        sid = secrets.token_urlsafe(32)
        sessions[sid] = (who.token_id, time.time() + SESSION_SECONDS)
        request.state.principal = who.name
        service.store.audit(who.name, "sign in to the owner page", who.token_id)
        resp = RedirectResponse("/owner", status_code=303)
        resp.set_cookie(
            SESSION_COOKIE,
            sid,
            httponly=True,
            samesite="strict",
            max_age=SESSION_SECONDS,
            secure=request.url.scheme == "https",
        )
        return resp

    @app.post("/owner/logout", response_model=None)
    def logout(request: Request) -> Response:
        sessions.pop(request.cookies.get(SESSION_COOKIE) or "", None)
        resp = RedirectResponse("/owner/login", status_code=303)
        resp.delete_cookie(SESSION_COOKIE)
        return resp


def _add_owner_page_routes(
    app: FastAPI, service: Service, session: Callable[[Request], Principal | None]
) -> None:
    """``/owner`` and its token forms, for a signed-in owner (``session``: the request's owner, or None)."""

    @app.get("/owner", response_model=None)
    def owner_page(request: Request) -> Response:
        who = session(request)
        if who is None:
            return RedirectResponse("/owner/login", status_code=303)
        request.state.principal = who.name
        return render_owner_page(service, who)

    @app.post("/owner/tokens", response_model=None)
    def create(
        request: Request,
        principal: str = Form(max_length=64),
        role: str = Form(default="analyst"),
        days: float = Form(default=90.0),
    ) -> Response:
        who = session(request)
        if who is None:
            return RedirectResponse("/owner/login", status_code=303)
        import re

        if (
            role not in ("owner", "analyst")
            or not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", principal)
            or not (0 < days <= 3650)
        ):
            return _login_page("invalid token form: holder name, role owner/analyst, 0 < days <= 3650.", 422)
        token, tid, expires = service.tokens.create(principal, role, days=days)
        service.store.audit(who.name, "create token", f"{tid} for {principal} ({role})")
        return render_owner_page(service, who, {"token": token, "principal": principal, "role": role})

    @app.post("/owner/tokens/{tid}/revoke", response_model=None)
    def revoke(tid: str, request: Request) -> Response:
        who = session(request)
        if who is None:
            return RedirectResponse("/owner/login", status_code=303)
        if service.tokens.revoke(tid):
            service.store.audit(who.name, "revoke token", tid)
        return RedirectResponse("/owner", status_code=303)


__all__ = ["add_owner_pages", "render_owner_page", "spend_svg"]
