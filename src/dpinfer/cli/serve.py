"""``dpinfer serve``, ``dpinfer serve-token`` (the data owner) and ``dpinfer remote`` (the analyst).

The owner::

    dpinfer serve-token create --config service.toml --holder owner --role owner
    dpinfer serve-token create --config service.toml --holder alice          # shown once
    dpinfer serve --config service.toml --port 8443 --certfile cert.pem --keyfile key.pem

The owner, while the service runs (an owner's token; each change is in the audit log)::

    dpinfer remote --url ... add-analyst --name carol --allowance survey=1.0
    dpinfer remote --url ... set-allowance --analyst carol --dataset survey --epsilon 2.0
    dpinfer remote --url ... token-create --holder carol           # shown once
    dpinfer remote --url ... token-rotate --id TOKEN_ID            # or token-revoke --id TOKEN_ID

The analyst (the token from the environment variable ``DPINFER_TOKEN`` or ``--token-file``,
never from the command line, where other users of the machine can read it)::

    dpinfer remote --url https://owner:8443 datasets
    dpinfer remote --url ... mean --dataset survey --column bmi --epsilon 0.5 --dry-run
    dpinfer remote --url ... mean --dataset survey --column bmi --epsilon 0.5 --out bmi.json
    dpinfer remote --url ... glm --dataset survey --target smoker --features age,bmi --epsilon 1 --out fit.npz
    dpinfer remote --url ... dpvi --dataset survey --target smoker --features age,bmi --epsilon 1 \\
        --steps 500 --dry-run
    dpinfer remote --url ... upload --file sims.npz          # from `dpinfer simulate`: an upload id
    dpinfer remote --url ... abcdp --dataset survey --upload ID --columns bmi -c 10 --epsilon 1 \\
        --bandwidth 4 --out abcdp.npz

``remote mean --out`` writes the release file of ``dpinfer release`` (read by ``dpinfer smc-abc
--model gaussian-mean --observed FILE``); ``remote glm --out`` the ``dpinfer.result`` file of the
posterior, as ``dpinfer glm --out`` does.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from .common import Refusal, add_command


def _serve(args: argparse.Namespace) -> int:
    from ..service.server import serve

    serve(args.config, host=args.host, port=args.port, certfile=args.certfile, keyfile=args.keyfile)
    return 0


def _open_store(config: str) -> Any:
    from ..service.auth import Tokens
    from ..service.config import load_config
    from ..service.store import Store

    cfg = load_config(config)
    return Tokens(Store(cfg.state / "service.db")), cfg


def _token(args: argparse.Namespace) -> int:
    tokens, cfg = _open_store(args.config)
    if args.action == "create":
        if not args.holder:
            raise Refusal("serve-token create needs --holder NAME.")
        known = set(cfg.analysts) | set(tokens.store.analysts())  # the file's and those added at run time
        if args.role == "analyst" and args.holder not in known:
            raise Refusal(
                f"{args.holder!r} is not an analyst of {Path(args.config).name} or its service (analysts: "
                f"{sorted(known)}); add them with their allowances first."
            )
        token, tid, expires = tokens.create(args.holder, args.role, days=args.days or cfg.token_days)
        tokens.store.audit("owner (command line)", "create token", f"{tid} for {args.holder} ({args.role})")
        if args.out:
            p = Path(args.out)
            p.touch(mode=0o600, exist_ok=False)
            p.write_text(token + "\n")
            print(
                f"token {tid} for {args.holder} ({args.role}) written to {p}, expires "
                f"{time.strftime('%Y-%m-%d', time.gmtime(expires))}"
            )
        else:
            print(token)
        return 0
    if args.action == "revoke":
        if not args.id:
            raise Refusal("serve-token revoke needs --id TOKEN_ID.")
        if not tokens.revoke(args.id):
            raise Refusal(f"no token {args.id!r}.")
        tokens.store.audit("owner (command line)", "revoke token", args.id)
        print(f"revoked token {args.id}")
        return 0
    for t in tokens.listing():
        state = "revoked" if t["revoked"] else ("expired" if t["expires"] <= time.time() else "active")
        print(
            f"{t['id']}  {t['principal']:<16} {t['role']:<8} {state:<8} expires "
            f"{time.strftime('%Y-%m-%d', time.gmtime(t['expires']))}"
        )
    return 0


def _client(args: argparse.Namespace) -> Any:
    from ..service.client import connect

    if args.token_file:
        token = Path(args.token_file).read_text().strip()
    else:
        token = os.environ.get("DPINFER_TOKEN", "").strip()
    if not token:
        raise Refusal("no token: set DPINFER_TOKEN or pass --token-file FILE.")
    verify: Any = args.cacert if args.cacert else True
    return connect(args.url, token, verify=verify)


def _remote(args: argparse.Namespace) -> int:
    from ..service.client import RemoteError, write_release_file

    client = _client(args)
    try:
        return _remote_command(args, client, write_release_file)
    except RemoteError as exc:
        raise Refusal(str(exc)) from None
    finally:
        client.close()


def _owner_command(args: argparse.Namespace, client: Any) -> int:
    """The owner's commands at run time (an owner's token)."""
    what = args.what
    if what == "analysts":
        out: Any = client.analysts()
    elif what == "add-analyst":
        allowances = {}
        for item in args.allowance or []:
            ds, sep, eps = item.partition("=")
            try:
                allowances[ds] = float(eps)
            except ValueError:
                raise Refusal(f"--allowance takes DATASET=EPSILON, got {item!r}.") from None
            if not sep:
                raise Refusal(f"--allowance takes DATASET=EPSILON, got {item!r}.")
        out = client.add_analyst(args.name, allowances)
    elif what == "set-allowance":
        out = client.set_allowance(args.analyst, args.dataset, args.epsilon)
    elif what == "token-create":
        out = client.create_token(args.holder, role=args.role, days=args.days)
    elif what == "token-revoke":
        out = client.revoke_token(args.id)
    else:  # token-rotate
        out = client.rotate_token(args.id, days=args.days)
    print(json.dumps(out, indent=2))
    return 0


OWNER_COMMANDS = ("analysts", "add-analyst", "set-allowance", "token-create", "token-revoke", "token-rotate")


def _remote_command(args: argparse.Namespace, client: Any, write_release_file: Any) -> int:
    what = args.what
    if what in OWNER_COMMANDS:
        return _owner_command(args, client)
    if what in ("datasets", "me", "history"):
        out = {"datasets": client.datasets, "me": client.me, "history": client.history}[what]()
        print(json.dumps(out, indent=2))
        return 0
    if what == "get":
        return _remote_get(args, client)
    if what in ("mean", "clamped"):
        return _remote_clamped(args, client, write_release_file)
    if what == "histogram":
        return _remote_histogram(args, client)
    if what == "upload":
        print(json.dumps({"upload": client.upload(path=args.file)}))
        return 0
    if what == "abcdp":
        return _remote_abcdp(args, client)
    if what == "glm":
        return _remote_glm(args, client)
    if what == "dpvi":
        return _remote_dpvi(args, client)
    raise Refusal(f"unknown remote command {what!r}.")  # pragma: no cover


def _remote_get(args: argparse.Namespace, client: Any) -> int:
    """``remote get``: one of the analyst's releases again, as JSON."""
    rel = client.retrieve(args.id)
    print(
        json.dumps(
            rel.to_dict()
            if hasattr(rel, "to_dict")
            else {"value": rel.value.tolist(), "privacy": rel.privacy.to_dict(), **rel.details},
            indent=2,
        )
    )
    return 0


def _remote_clamped(args: argparse.Namespace, client: Any, write_release_file: Any) -> int:
    """``remote mean`` / ``remote clamped``: a clamped mean (or sum) of one column."""
    rel = client.clamped(
        args.dataset,
        args.column,
        epsilon=args.epsilon,
        statistic=args.statistic,
        lower=args.lower,
        upper=args.upper,
        mechanism=args.mechanism,
        delta=args.delta,
        dry_run=args.dry_run,
        purpose=args.purpose,
    )
    tag = "DRY RUN on the public dummy data set (nothing charged): " if args.dry_run else ""
    print(
        f"{tag}{args.statistic} of {args.column!r} in {args.dataset!r}: {rel.value.tolist()} "
        f"(request {rel.details.get('id')})"
    )
    print(rel.privacy.summary())
    if args.out:
        if "release_file" in rel.details:
            print(f"wrote {write_release_file(rel, args.out)}")
        else:
            Path(args.out).write_text(
                json.dumps(
                    {"value": rel.value.tolist(), "privacy": rel.privacy.to_dict(), **rel.details},
                    indent=2,
                )
            )
            print(f"wrote {args.out}")
    return 0


def _remote_histogram(args: argparse.Namespace, client: Any) -> int:
    """``remote histogram``: noisy counts of each category of one column."""
    rel = client.histogram(
        args.dataset, args.column, epsilon=args.epsilon, dry_run=args.dry_run, purpose=args.purpose
    )
    for label, v in zip(rel.details["labels"], rel.value.tolist(), strict=True):
        print(f"{label}: {v:g}")
    print(rel.privacy.summary())
    return 0


def _remote_abcdp(args: argparse.Namespace, client: Any) -> int:
    """``remote abcdp``: ABCDP on the analyst's uploaded simulations."""
    cols = [c.strip() for c in args.columns.split(",")]
    res = client.abcdp(
        args.dataset,
        upload=args.upload,
        columns=cols,
        c=args.c,
        epsilon=args.epsilon,
        bandwidth=args.bandwidth,
        epsilon_abc=args.epsilon_abc,
        n_features=args.n_features,
        dry_run=args.dry_run,
        purpose=args.purpose,
    )
    print(res.summary())
    if args.out:
        print(f"wrote {res.save(args.out)}")
    return 0


def _remote_glm(args: argparse.Namespace, client: Any) -> int:
    """``remote glm``: a private GLM, its posterior computed here."""
    from ..inference.glm import GLMSamplerOptions

    feats = [f.strip() for f in args.features.split(",") if f.strip()]
    fit = client.glm(
        args.dataset,
        target=args.target,
        features=feats,
        family=args.family,
        epsilon=args.epsilon,
        delta=args.delta,
        dry_run=args.dry_run,
        seed=args.seed,
        sampler=GLMSamplerOptions(proposals=args.proposals),
        purpose=args.purpose,
    )
    if args.dry_run:
        print("DRY RUN on the public dummy data set (nothing charged)")
    print(fit.summary())
    if args.out:
        print(f"wrote {fit.save(args.out)}")
    return 0


def _remote_dpvi(args: argparse.Namespace, client: Any) -> int:
    """``remote dpvi``: a DPVI fit of a built-in model."""
    res = client.dpvi(
        args.dataset,
        target=args.target,
        features=[f.strip() for f in args.features.split(",") if f.strip()],
        epsilon=args.epsilon,
        model=args.model,
        delta=args.delta,
        intercept=not args.no_intercept,
        steps=args.steps,
        sampling_rate=args.sampling_rate,
        seed=args.seed,
        dry_run=args.dry_run,
        purpose=args.purpose,
    )
    if args.dry_run:
        print("DRY RUN on the public dummy data set (nothing charged)")
    print(res.summary())
    if args.out:
        print(f"wrote {res.save(args.out)}")
    return 0


def register(subparsers: Any) -> None:
    """Add ``serve``, ``serve-token`` and ``remote`` to the CLI."""
    _register_serve(subparsers)
    _register_serve_token(subparsers)
    _register_remote(subparsers)


def _register_serve(subparsers: Any) -> None:
    """``dpinfer serve``."""
    p = add_command(subparsers, "serve", help="data owner: serve data sets to analysts over HTTP(S)")
    p.add_argument("--config", required=True, help="the service configuration (TOML, YAML or JSON)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on")
    p.add_argument("--port", type=int, default=8000, help="port to listen on")
    p.add_argument("--certfile", help="TLS certificate (PEM); with --keyfile, serve HTTPS")
    p.add_argument("--keyfile", help="TLS private key (PEM)")
    p.set_defaults(func=_serve)


def _register_serve_token(subparsers: Any) -> None:
    """``dpinfer serve-token``."""
    t = add_command(
        subparsers, "serve-token", help="data owner: create, list or revoke the service's API tokens"
    )
    t.add_argument("action", choices=("create", "list", "revoke"), help="what to do")
    t.add_argument("--config", required=True, help="the service configuration")
    t.add_argument("--holder", help="create: the analyst's (or owner's) name")
    t.add_argument("--role", default="analyst", choices=("analyst", "owner"), help="create: the token's role")
    t.add_argument(
        "--days", type=float, default=None, help="create: lifetime in days (default: the config's)"
    )
    t.add_argument("--out", help="create: write the token to this new file (mode 600) instead of printing it")
    t.add_argument("--id", help="revoke: the token's id")
    t.set_defaults(func=_token)


def _register_remote(subparsers: Any) -> None:
    """``dpinfer remote`` and its commands (queries, fits, the owner's)."""
    r = add_command(subparsers, "remote", help="analyst: query a data owner's dpinfer service")
    r.add_argument("--url", required=True, help="the service's base URL")
    r.add_argument("--token-file", help="file holding your token (default: $DPINFER_TOKEN)")
    r.add_argument("--cacert", help="CA bundle or the owner's certificate, for TLS verification")
    sub = r.add_subparsers(dest="what", metavar="WHAT", required=True)
    _add_remote_queries(sub)
    _add_remote_fits(sub)
    _add_remote_owner_commands(sub)
    r.set_defaults(func=_remote)


def _add_release_arguments(q: argparse.ArgumentParser) -> None:
    """The arguments every release request takes: data set, epsilon, dry run, purpose."""
    q.add_argument("--dataset", required=True, help="data set name")
    q.add_argument("--epsilon", type=float, required=True, help="epsilon of the release")
    q.add_argument("--dry-run", action="store_true", help="run on the public dummy data set (free)")
    q.add_argument("--purpose", default="", help="why (recorded with the charge)")


def _add_remote_queries(sub: Any) -> None:
    """``remote datasets | me | history | get | mean | clamped | histogram | upload``."""
    for name, helptext in (
        ("datasets", "list data sets and their public schemas"),
        ("me", "your allowances and spend"),
        ("history", "your requests"),
    ):
        sub.add_parser(name, help=helptext)
    g = sub.add_parser("get", help="fetch one of your releases again")
    g.add_argument("--id", required=True, help="the request id")
    for name in ("mean", "clamped"):
        m = sub.add_parser(name, help="a clamped mean (or sum) of one column")
        _add_release_arguments(m)
        m.add_argument("--column", required=True, help="the column")
        m.add_argument("--statistic", default="mean", choices=("mean", "sum", "sum_and_count"))
        m.add_argument("--lower", type=float, help="clamp lower bound (default: the schema's)")
        m.add_argument("--upper", type=float, help="clamp upper bound (default: the schema's)")
        m.add_argument("--mechanism", default="laplace", choices=("laplace", "gaussian", "geometric"))
        m.add_argument("--delta", type=float, default=0.0, help="delta (gaussian only)")
        m.add_argument("--out", help="write the release file here")
    h = sub.add_parser("histogram", help="noisy counts of each category of one column")
    _add_release_arguments(h)
    h.add_argument("--column", required=True, help="the column")
    up = sub.add_parser("upload", help="upload simulations for ABCDP (the .npz of `dpinfer simulate`)")
    up.add_argument("--file", required=True, help="the .npz holding theta (T, p) and sims (T, M, d)")


def _add_remote_fits(sub: Any) -> None:
    """``remote abcdp | glm | dpvi``."""
    ab = sub.add_parser("abcdp", help="ABCDP on your uploaded simulations: the accepted theta")
    _add_release_arguments(ab)
    ab.add_argument("--upload", required=True, help="the upload's id")
    ab.add_argument("--columns", required=True, help="comma-separated columns compared with the simulations")
    ab.add_argument("-c", type=int, required=True, help="number of draws to accept")
    ab.add_argument(
        "--bandwidth", type=float, required=True, help="RFF kernel bandwidth (from the simulations)"
    )
    ab.add_argument("--epsilon-abc", type=float, default=0.0, help="the ABC threshold")
    ab.add_argument("--n-features", type=int, default=100, help="random Fourier features")
    ab.add_argument("--out", help="write the ABCDP result (dpinfer.result .npz) here")
    gl = sub.add_parser("glm", help="a private GLM: released statistics, posterior computed here")
    _add_release_arguments(gl)
    gl.add_argument("--target", required=True, help="the response column")
    gl.add_argument("--features", required=True, help="comma-separated feature columns")
    gl.add_argument("--family", default="logistic", choices=("logistic", "probit", "poisson", "linear"))
    gl.add_argument("--delta", type=float, default=1e-6, help="delta of the release")
    gl.add_argument("--seed", type=int, default=None, help="sampler seed (never the privacy noise)")
    gl.add_argument("--proposals", type=int, default=4000, help="importance-sampling proposals")
    gl.add_argument("--out", help="write the posterior (dpinfer.result .npz) here")
    dv = sub.add_parser("dpvi", help="a DPVI fit of a built-in model: the variational posterior")
    _add_release_arguments(dv)
    dv.add_argument("--target", required=True, help="the response column")
    dv.add_argument("--features", required=True, help="comma-separated feature columns")
    dv.add_argument("--model", default="logistic", choices=("logistic", "poisson", "gaussian-linear"))
    dv.add_argument("--delta", type=float, default=1e-6, help="delta of the fit")
    dv.add_argument("--steps", type=int, default=1000, help="iterations (capped by the service)")
    dv.add_argument("--sampling-rate", type=float, default=0.05, help="Poisson batch probability q")
    dv.add_argument("--no-intercept", action="store_true", help="fit without an intercept column")
    dv.add_argument("--seed", type=int, default=None, help="Monte Carlo seed (never the privacy noise)")
    dv.add_argument("--out", help="write the fit (dpinfer.result .npz) here")


def _add_remote_owner_commands(sub: Any) -> None:
    """The owner's ``remote`` commands: analysts, allowances, tokens."""
    sub.add_parser("analysts", help="owner: the analysts and their allowances")
    aa = sub.add_parser("add-analyst", help="owner: add an analyst (with allowances) while the service runs")
    aa.add_argument("--name", required=True, help="the analyst's name")
    aa.add_argument("--allowance", action="append", help="DATASET=EPSILON (repeatable)")
    sa = sub.add_parser("set-allowance", help="owner: set an analyst's allowance on a data set")
    sa.add_argument("--analyst", required=True, help="the analyst's name")
    sa.add_argument("--dataset", required=True, help="the data set")
    sa.add_argument("--epsilon", type=float, required=True, help="the new allowance (epsilon)")
    tc = sub.add_parser("token-create", help="owner: a new token (printed once)")
    tc.add_argument("--holder", required=True, help="the analyst's (or owner's) name")
    tc.add_argument("--role", default="analyst", choices=("analyst", "owner"))
    tc.add_argument("--days", type=float, default=90.0, help="lifetime in days")
    tr = sub.add_parser("token-revoke", help="owner: revoke a token")
    tr.add_argument("--id", required=True, help="the token's id")
    tt = sub.add_parser("token-rotate", help="owner: revoke a token and print its holder's new one")
    tt.add_argument("--id", required=True, help="the token's id")
    tt.add_argument(
        "--days", type=float, default=None, help="lifetime of the new token (default: the config's)"
    )


__all__ = ["register"]
