# Multi-stage: build wheels with a compiler, run on a slim image as a non-root user.
# Versions are pinned by constraints.txt (`make constraints` writes it from the tested venv).
FROM python:3.11-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md constraints.txt ./
COPY app ./app
RUN pip wheel --no-cache-dir --wheel-dir /wheels -c constraints.txt ".[dask,postgres,s3]"

FROM python:3.11-slim AS runtime
# DATA_DIR: the embedded SQLite database when DATABASE_URL is not set.
# NUMBA_CACHE_DIR: compiled kernels, filled at build time below.
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    DATA_DIR=/srv/workbench/var NUMBA_CACHE_DIR=/opt/numba-cache
RUN useradd --create-home --uid 10001 workbench
COPY --from=build /wheels /wheels
# Only the wheels built above: the installed set is exactly the pinned one.
RUN pip install --no-cache-dir --no-index --find-links /wheels "clustering-workbench[dask,postgres,s3]" \
    && rm -rf /wheels
# Compile every numba kernel once into the image (cache=True on every kernel): a container's
# first run would otherwise spend ~24 s compiling. Numba keys its cache on the CPU, so a host
# with a different CPU model recompiles (once per container) instead of using it.
RUN workbench warm-cache && chown -R workbench:workbench /opt/numba-cache
WORKDIR /srv/workbench
# arrays/: the array store the app and the Dask workers share (a volume in docker-compose.yml).
RUN mkdir -p var arrays && chown -R workbench:workbench /srv/workbench
USER workbench
EXPOSE 8000
# The web server's check; the scheduler and worker services override it in docker-compose.yml.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/api/v1/health', timeout=4)"
CMD ["workbench", "serve", "--host", "0.0.0.0", "--port", "8000"]
