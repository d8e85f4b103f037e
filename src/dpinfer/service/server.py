"""Start the service: ``dpinfer serve --config service.toml`` (uvicorn, optional TLS).

One process serves one state folder (:class:`~dpinfer.service.core.Service` locks it). Logging
goes to standard error, one line per request (:mod:`dpinfer.service.app`); uvicorn's own access
log (which prints raw paths) is off.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from .config import load_config


def configure_logging(level: int = logging.INFO) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("dpinfer.service")
    logger.handlers[:] = [handler]
    logger.setLevel(level)
    logger.propagate = False


def serve(
    config: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    certfile: str | None = None,
    keyfile: str | None = None,
) -> None:
    """Load ``config``, open the service and serve it until interrupted."""
    import warnings

    import uvicorn

    from ..errors import PrivacyWarning
    from .app import create_app
    from .core import Service

    configure_logging()
    # dry runs release without a ledger on purpose (their reports say accounted: false)
    warnings.filterwarnings("ignore", message=".*WITHOUT a ledger.*", category=PrivacyWarning)
    if (certfile is None) != (keyfile is None):
        raise ValueError("TLS needs both --certfile and --keyfile.")
    cfg = load_config(config)
    service = Service(cfg)
    app = create_app(service)

    log = logging.getLogger("dpinfer.service")
    scheme = "https" if certfile else "http"
    log.info("serving %d data set(s) on %s://%s:%d", len(service.public_datasets()), scheme, host, port)
    try:
        uvicorn.run(
            app,
            host=host,
            port=port,
            ssl_certfile=certfile,
            ssl_keyfile=keyfile,
            access_log=False,
            log_level="warning",
            timeout_graceful_shutdown=5,
        )
    finally:
        service.close()


__all__ = ["configure_logging", "serve"]
