# mempipe in a container. Build: docker build -t mempipe .   Usage: README.md, "Docker".
#
# Stage 1 builds wheels (mempipe's and its dependencies'); stage 2 installs only those, so the
# runtime image carries no source tree, build tools or pip cache.

FROM python:3.11-slim AS build
WORKDIR /src
# Only what the wheel is made of (.dockerignore keeps the rest out of the context).
COPY pyproject.toml setup.py README.md ./
COPY pipeline ./pipeline
COPY sql ./sql
COPY prompts ./prompts
COPY config ./config
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    MEMPIPE_DATABASE_URL=sqlite:////data/mempipe.db
# Bind-mounted rather than copied: the wheels never become a layer of the runtime image.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links /wheels mempipe
# An unprivileged user owning /data, where the SQLite file (and the lock file beside it) live.
RUN useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin mempipe \
    && mkdir -p /data && chown mempipe:mempipe /data
USER mempipe
WORKDIR /data
VOLUME ["/data"]
ENTRYPOINT ["mempipe"]
CMD ["--help"]
