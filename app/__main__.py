"""`python -m app serve|migrate`: the commands behind `make run` and the Docker image."""

import argparse
import logging

import uvicorn

from app.config import get_settings
from app.db.migrate import upgrade_to_head

SHUTDOWN_GRACE_S = 5


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m app")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="migrate, create the admin and demo data, serve HTTP")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    sub.add_parser("migrate", help="upgrade the database to the newest schema")
    args = parser.parse_args()

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.command == "migrate":
        upgrade_to_head(get_settings().database_url)
        return
    uvicorn.run(
        "app.main:create_app",
        factory=True,
        host=args.host,
        port=args.port,
        # Open progress streams would otherwise hold a stopping server until their runs end.
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
    )


if __name__ == "__main__":
    main()
