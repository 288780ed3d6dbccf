"""One settings object, read from the environment (and an optional `.env`) at start-up."""

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

SQLITE_FILE = "workbench.db"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    # Where the embedded database lives: the working directory's var/ (never the installed
    # package's directory, which is site-packages once installed from a wheel).
    data_dir: Path = Path("var")
    database_url: str = Field(
        default="",
        description="SQLAlchemy URL. SQLite in DATA_DIR (default) or postgresql+psycopg://...",
    )
    # Where `workbench serve` (and `make run`) listens.
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    admin_username: str = "admin"
    admin_password: str | None = None
    load_demo_data: bool = True
    migrate_on_start: bool = True

    # Where arrays live (features, ids, views, images, run labels): a directory (default
    # DATA_DIR/arrays) or an fsspec URL such as s3://bucket/prefix, which workers on other
    # machines can read too. S3 credentials and endpoint come from the usual AWS_* variables;
    # ARRAY_STORE_OPTIONS (JSON) passes anything else to fsspec, e.g. {"endpoint_url": ...}.
    array_store: str = ""
    array_store_options: dict[str, object] = Field(default_factory=dict)
    # Where datasets may be imported by reference (read in place, never copied): URL prefixes
    # (s3://bucket/prefix/, file:///mnt/shared/) mapped to their fsspec options (JSON), e.g.
    # {"s3://lab-data/": {"endpoint_url": "http://minio:9000", "key": "...", "secret": "..."}}.
    # Empty (the default): import by reference is off. Users name URLs, never credentials.
    import_sources: dict[str, dict[str, object]] = Field(default_factory=dict)
    max_upload_bytes: int = Field(default=1024**3, gt=0)
    # Largest image (width x height) an upload may hold: sized for whole slides (50k x 50k).
    image_max_pixels: int = Field(default=2_500_000_000, gt=0)
    # Images up to this size are decoded whole at upload and featurized from memory (in blocks
    # above 16.7 MP); a TIFF above it is a slide, read in bands into the array store and
    # featurized block by block from there (memory per block, not per slide). PNG and JPEG
    # cannot be read in bands: above it they are refused.
    image_whole_pixels: int = Field(default=50_000_000, gt=0)
    chunk_rows: int = Field(default=65_536, gt=0)

    jobs_executor: Literal["inline", "dask"] = "inline"
    # With the inline executor, fit every algorithm once on iris in a background thread at
    # start-up, so the first run does not pay for loading (or, on a cold cache, compiling) the
    # numba kernels: 0.5 s of a first live re-run at 10k points, 24 s cold.
    warm_kernels_on_start: bool = True
    # Inline executor threads (runs and featurizations), and how many of them one user's jobs
    # may hold at once (empty: all but one, so another user's job never waits behind a burst).
    inline_workers: int = Field(default=3, ge=1, le=64)
    inline_workers_per_user: int | None = Field(default=None, ge=1, le=64)
    # Threads of the BLAS library (numpy's matrix products) in `workbench serve`. The server runs
    # requests, runs and featurizations side by side on a few cores, where BLAS's own threads
    # only spin-wait against the others: a 1M x 20 CSV upload took 15 s with OpenBLAS's 2
    # threads and 8 s with 1 on a 2-core machine (Dask workers default to 1 for the same reason).
    blas_threads: int = Field(default=1, ge=1, le=256)
    dask_scheduler: str = "tcp://127.0.0.1:8786"
    # With JOBS_EXECUTOR=dask, CEC, CEC-IB and PPC runs on tables of at least this many items fit
    # data-parallel over the store's chunks on all workers (engine/*/chunked); smaller
    # ones fit in one task, which is faster where the data fits a worker (docs/distributed.md).
    distributed_min_items: int = Field(default=2_000_000, ge=2)
    # How often the app tries an unreachable scheduler again (runs wait meanwhile).
    dask_retry_seconds: float = Field(default=5.0, gt=0)
    # How many Dask workers the cluster should have: /health says when it has fewer (a worker
    # lost for good); None: no expectation.
    dask_workers_expected: int | None = Field(default=None, ge=1)

    session_cookie_name: str = "workbench_session"
    session_cookie_secure: bool = False
    session_lifetime_hours: int = Field(default=24 * 7, gt=0)
    access_token_lifetime_minutes: int = Field(default=60 * 24, gt=0)

    # Hostile-input limits: background jobs (runs, image featurizations) one user may have
    # queued or running at once (MAX_ACTIVE_RUNS_PER_USER, its former name, still read), and
    # how many inline workers one user's jobs may hold while another user's wait; and login
    # throttling (failures per (username, client address) pair, and a separate, higher budget
    # per client address, within a window, then an exponentially growing wait).
    max_active_jobs_per_user: int = Field(
        default=20,
        ge=1,
        validation_alias=AliasChoices("max_active_jobs_per_user", "max_active_runs_per_user"),
    )
    login_max_failures: int = Field(default=5, ge=1)
    login_max_failures_per_address: int = Field(default=100, ge=1)
    login_failure_window_seconds: int = Field(default=15 * 60, gt=0)
    login_backoff_seconds: int = Field(default=30, gt=0)
    login_backoff_max_seconds: int = Field(default=60 * 60, gt=0)
    # Origins besides the server's own (scheme://host:port of the request) whose cookie-carrying
    # state-changing requests are accepted, comma-separated: e.g. the public https:// address
    # when a proxy in front rewrites the Host header.
    trusted_origins: str = ""
    # Proxies whose X-Forwarded-For / X-Forwarded-Proto are believed, comma-separated addresses
    # or networks (e.g. "172.18.0.0/16" for compose's network). Empty: none, so the client
    # address (which login throttling counts) is the connecting peer and cannot be forged.
    trusted_proxies: str = ""

    @field_validator("database_url")
    @classmethod
    def _use_psycopg3(cls, url: str) -> str:
        # `postgresql://` would make SQLAlchemy look for psycopg2, which we do not ship.
        if url.startswith("postgresql://"):
            return "postgresql+psycopg://" + url.removeprefix("postgresql://")
        if url.startswith("postgres://"):
            return "postgresql+psycopg://" + url.removeprefix("postgres://")
        return url

    @model_validator(mode="after")
    def _default_database_in_data_dir(self) -> "Settings":
        if not self.database_url:
            self.database_url = f"sqlite:///{self.data_dir.resolve() / SQLITE_FILE}"
        if not self.array_store:
            self.array_store = str(self.data_dir.resolve() / "arrays")
        return self

    @property
    def trusted_proxy_list(self) -> list[str]:
        return [p.strip() for p in self.trusted_proxies.split(",") if p.strip()]

    @property
    def trusted_origin_list(self) -> list[str]:
        return [o.strip().rstrip("/").lower() for o in self.trusted_origins.split(",") if o.strip()]

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


@lru_cache
def get_settings() -> Settings:
    return Settings()
