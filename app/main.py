"""The ASGI application: `create_app()` wires settings, database, routers and pages."""

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from app import __version__
from app.api.openapi import install_openapi, operation_id
from app.api.router import api_router
from app.api.upload_limit import UploadLimitMiddleware
from app.config import Settings, get_settings
from app.db.migrate import upgrade_to_head
from app.db.session import make_engine, make_session_factory, session_scope
from app.error_handlers import install_error_handlers
from app.jobs.execute.executors import make_executor
from app.jobs.featurize.collection_images import release_unneeded_files
from app.jobs.run.run_events import RunEvents
from app.jobs.warmup import engine_state, warm_children
from app.services.array_store_state import StoreHealth, sweep_array_store
from app.services.bootstrap import bootstrap
from app.services.ingest.short_transactions import sweep_abandoned_uploads
from app.services.source_reading import read_imported_table
from app.store.array_store import ArrayStore
from app.store.sources.binding import bind_sources
from app.store.transactions import bind_store
from app.web.docs import router as docs_router
from app.web.pages import router as pages_router
from app.web.proxy_rule import keep_server_from_believing_proxies
from app.web.security import OriginCheckMiddleware, SecurityHeadersMiddleware
from app.web.templating import STATIC_DIR

log = logging.getLogger(__name__)


def create_app(settings: Settings | None = None) -> FastAPI:
    keep_server_from_believing_proxies()  # forwarded headers: TRUSTED_PROXIES alone decides
    settings = settings or get_settings()
    engine = make_engine(settings.database_url)
    session_factory = make_session_factory(engine)
    array_store = ArrayStore(settings.array_store, settings.array_store_options)
    bind_store(session_factory, array_store)
    bind_sources(session_factory, settings.import_sources)
    run_events = RunEvents()  # wakes progress streams when a run changes

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        _start(app, settings, session_factory, array_store, run_events)
        yield
        _stop(app, engine)

    app = FastAPI(
        title="Clustering workbench",
        version=__version__,
        description="Expert-guided semi-supervised clustering: datasets, side information, runs.",
        lifespan=lifespan,
        generate_unique_id_function=operation_id,
        docs_url=None,  # served from vendored files by app/web/docs.py
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.session_factory = session_factory
    app.state.run_events = run_events
    _add_middleware(app, settings)
    _add_routes(app)
    return app


def _start(
    app: FastAPI,
    settings: Settings,
    session_factory: sessionmaker[Session],
    array_store: ArrayStore,
    run_events: RunEvents,
) -> None:
    """The lifespan's start: warm the kernels, migrate, check the array store, bootstrap the
    database, and start the executor on the runs left queued."""
    if settings.jobs_executor == "inline":
        engine_state.track()
        if settings.warm_kernels_on_start:
            # First, before migrating and loading the demo: the children compiling the
            # kernels gain those seconds on a newcomer's first run (`workbench serve` has
            # started it already, before importing the app; this returns that one).
            app.state.kernel_warmup = warm_children.warm_in_background()
    if settings.migrate_on_start:
        upgrade_to_head(settings.database_url, array_store)
    with session_scope(session_factory) as session:
        sweep_abandoned_uploads(session)  # before the store's sweep: their arrays go with them
        release_unneeded_files(session)  # a collection's files whose images were all deleted
    store_problem = sweep_array_store(session_factory, array_store)
    app.state.store_health = StoreHealth(array_store, store_problem)
    with session_scope(session_factory) as session:
        bootstrap(session=session, settings=settings, store_usable=store_problem is None)
    app.state.executor = make_executor(
        settings, session_factory, run_events.publish, read_table=read_imported_table
    )
    # Runs and featurizations queued or interrupted (the demo picture's, on first start).
    app.state.executor.resume()


def _stop(app: FastAPI, engine: Engine) -> None:
    """The lifespan's end: stop the kernel warm-up and the executor, close the database."""
    if hasattr(app.state, "kernel_warmup"):
        app.state.kernel_warmup.stop()
    app.state.executor.shutdown()
    engine.dispose()


def _add_middleware(app: FastAPI, settings: Settings) -> None:
    """The middleware, innermost first (each one added wraps those before it)."""
    app.add_middleware(
        UploadLimitMiddleware,
        max_upload_bytes=settings.max_upload_bytes,
        cookie_name=settings.session_cookie_name,
    )
    # Added last, so they wrap the rest: headers on every response (outermost), and cross-site
    # writes refused before any other middleware or route sees them.
    app.add_middleware(
        OriginCheckMiddleware,
        cookie_name=settings.session_cookie_name,
        trusted_origins=settings.trusted_origin_list,
    )
    app.add_middleware(SecurityHeadersMiddleware)
    if settings.trusted_proxy_list:
        # Outermost: the client address and scheme are the proxy's word before anything reads
        # them. Only from the proxies named; the server's own handling is off (proxy_rule.py).
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=settings.trusted_proxy_list)


def _add_routes(app: FastAPI) -> None:
    """Error handlers, the API (with its OpenAPI document), the pages, the docs and the
    static files."""
    install_error_handlers(app)
    app.include_router(api_router)
    install_openapi(app)
    app.include_router(pages_router)
    app.include_router(docs_router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
