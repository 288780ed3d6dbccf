# Multi-stage: build wheels with a compiler, run on a slim image as a non-root user.
FROM python:3.11-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY app ./app
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    NUMBA_CACHE_DIR=/tmp/numba-cache PYTHONPATH=/srv/workbench
RUN useradd --create-home --uid 10001 workbench
WORKDIR /srv/workbench
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/* && rm -rf /wheels
# The app finds alembic.ini and migrations/ beside the package's parent directory.
COPY alembic.ini ./
COPY migrations ./migrations
COPY app ./app
RUN mkdir -p var && chown -R workbench:workbench /srv/workbench
USER workbench
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/api/v1/health')"
CMD ["python", "-m", "app", "serve", "--host", "0.0.0.0", "--port", "8000"]
