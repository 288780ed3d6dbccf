"""One proxy rule whatever starts the server: the app's TRUSTED_PROXIES, never the server's.

uvicorn (and gunicorn's uvicorn worker) wrap the app in their own proxy-header middleware,
which believes X-Forwarded-For from 127.0.0.1 by default: run as `uvicorn app.main:create_app
--factory`, a local client could name any address and sign in past the login throttle. That
middleware rewrites the client address before the app sees the request, and keeps no trace of
the peer, so the app cannot undo it afterwards; it can only keep it from being installed.
uvicorn installs it right after calling the factory, from its `Config.proxy_headers`: the
factory finds that config among its callers and turns the flag off. The app then believes
forwarded headers only from TRUSTED_PROXIES (`app.main._add_middleware`).
"""

import logging
import sys
from types import FrameType

log = logging.getLogger(__name__)


def keep_server_from_believing_proxies() -> bool:
    """Turn off the proxy headers of the uvicorn config loading the app, if one is; whether
    one was found with them on."""
    try:
        from uvicorn import Config
    except ImportError:  # another ASGI server: it has no such middleware of its own
        return False
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        config = frame.f_locals.get("self")
        if isinstance(config, Config):
            was_on = bool(config.proxy_headers)
            config.proxy_headers = False
            if was_on:
                log.info(
                    "the server's own X-Forwarded-For handling is off: forwarded addresses "
                    "are believed only from TRUSTED_PROXIES"
                )
            return was_on
        frame = frame.f_back
    return False
