"""`workbench serve|migrate|create-user|warm-cache` (also `python -m app ...`): the commands behind
`make run` and the Docker image."""

import argparse
import getpass
import logging
import socket
import sys

import uvicorn

from app import __version__
from app.config import Settings, get_settings
from app.db.migrate import upgrade_to_head
from app.db.session import make_engine, make_session_factory, session_scope
from app.jobs.run.run_events import close_all_streams
from app.services import accounts, security
from app.services.errors import ServiceError
from app.store.array_store import ArrayStore

SHUTDOWN_GRACE_S = 5


class _Server(uvicorn.Server):
    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # Progress streams end only when their run does; uvicorn would wait for them, then cut
        # them. Told first, each sends a closing event and ends, and the server stops at once.
        close_all_streams()
        await super().shutdown(sockets)


def _array_store(settings: Settings) -> ArrayStore:
    return ArrayStore(settings.array_store, settings.array_store_options)


def _parser() -> argparse.ArgumentParser:
    settings = get_settings()
    parser = argparse.ArgumentParser(prog="workbench")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="migrate, create the admin and demo data, serve HTTP")
    serve.add_argument("--host", default=settings.host, help="default: HOST or 127.0.0.1")
    serve.add_argument("--port", type=int, default=settings.port, help="default: PORT or 8000")
    sub.add_parser("migrate", help="upgrade the database to the newest schema")
    user = sub.add_parser("create-user", help="add an account (prints a generated password)")
    user.add_argument("username")
    user.add_argument("--admin", action="store_true", help="an administrator")
    user.add_argument(
        "--password-stdin", action="store_true", help="read the password from standard input"
    )
    warm = sub.add_parser(
        "warm-cache", help="fit every algorithm once so numba's cache (NUMBA_CACHE_DIR) is filled"
    )
    warm.add_argument(
        "--only", action="append", metavar="ALGORITHM", help="just this one, in this process"
    )
    warm.add_argument(
        "--processes", type=int, default=2, help="methods compiled at once (child processes)"
    )
    warm.add_argument(
        "--kernels", metavar="GROUP", help="compile one kernel group only (a warm-up helper)"
    )
    return parser


def create_user(username: str, is_admin: bool, password_stdin: bool) -> int:
    settings = get_settings()
    upgrade_to_head(settings.database_url, _array_store(settings))
    if password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    elif sys.stdin.isatty():
        password = getpass.getpass("Password (empty: generate one): ")
    else:
        password = ""
    generated = not password
    password = password or security.generate_password()
    engine = make_engine(settings.database_url)
    try:
        with session_scope(make_session_factory(engine)) as session:
            accounts.create_user(
                session=session, username=username, password=password, is_admin=is_admin
            )
    except ServiceError as exc:
        print(f"workbench create-user: {exc.detail}", file=sys.stderr)
        return 2
    finally:
        engine.dispose()
    print(f"created {'admin ' if is_admin else ''}user {username!r}")
    if generated:
        print(f"password: {password}  (shown only now)")
    return 0


def main() -> None:
    args = _parser().parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.command == "migrate":
        upgrade_to_head(get_settings().database_url, _array_store(get_settings()))
        return
    if args.command == "warm-cache" and args.kernels:
        from app.engine.core.precompile import compile_group  # the engine only: a quick start

        compile_group(args.kernels)
        return
    if args.command == "warm-cache":
        from app.jobs.warmup import warm_cache, warm_children  # imports every estimator

        if args.only:
            warm_cache.warm_numba_cache(args.only)
        else:
            warm_children.warm_in_processes(max(args.processes, 1), helpers=False)
        return
    if args.command == "create-user":
        sys.exit(create_user(args.username, args.admin, args.password_stdin))
    settings = get_settings()
    _limit_blas_threads(settings.blas_threads)
    if settings.jobs_executor == "inline" and settings.warm_kernels_on_start:
        # Before uvicorn imports the app (2 s): the compiling children gain those seconds.
        from app.jobs.warmup import warm_children

        warm_children.warm_in_background()
    config = uvicorn.Config(
        "app.main:create_app",
        factory=True,
        host=args.host,
        port=args.port,
        # What a connection still open after its streams were told to end may take.
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        # uvicorn believes X-Forwarded-For from 127.0.0.1 by default, so a local client could
        # pick the address login throttling counts; the app trusts only TRUSTED_PROXIES.
        proxy_headers=False,
    )
    _Server(config).run()


def _limit_blas_threads(threads: int) -> None:
    """BLAS_THREADS for the whole server process, from now on (not a context: every request
    thread and job shares the library's one pool)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads, user_api="blas")


if __name__ == "__main__":
    main()
