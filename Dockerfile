# Mnemo — the image holds code only; all state lives in the /app/workspace volume.
#
#   docker build -t mnemo .                                   (or `docker compose up -d --build`)
#   docker run --env-file .env -v "$PWD/workspace:/app/workspace" mnemo
#
# Build arguments:
#   UID, GID   the user the bot runs as (default 1000:1000): make them yours (`id -u`, `id -g`)
#              and the bind-mounted workspace stays editable on the host without sudo
#   EMBEDDER   1 adds the local embedding model's packages (model2vec, ~45 MB) for
#              BOT_RAG__EMBEDDER=model2vec; left out by default
#   REPLICAS   1 adds replicated mode's packages (PostgreSQL, the queue, the webhook server:
#              docker-compose.replicas.yml); not with EMBEDDER=1
FROM python:3.11-slim

ARG UID=1000
ARG GID=1000
ARG EMBEDDER=0
ARG REPLICAS=0

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

# The runtime user; it owns the workspace and nothing else. --non-unique: a host id may
# already name a user or group of the base image (e.g. GID 100, "users").
RUN groupadd --non-unique --gid "${GID}" mnemo \
 && useradd --non-unique --uid "${UID}" --gid "${GID}" --home-dir /app --no-create-home \
        --shell /usr/sbin/nologin mnemo

WORKDIR /app

# Dependencies first: this layer is rebuilt only when a lock changes. The locks carry
# hashes, so pip installs in --require-hashes mode; requirements-embedder.lock is the
# runtime lock plus the embedder extra.
COPY requirements.lock requirements-embedder.lock requirements-replicas.lock ./
RUN if [ "${EMBEDDER}" = "1" ]; then lock=requirements-embedder.lock; \
    elif [ "${REPLICAS}" = "1" ]; then lock=requirements-replicas.lock; \
    else lock=requirements.lock; fi \
 && pip install -r "${lock}"

# Then the code (root-owned, read-only for the runtime user). Editable install:
# the `mnemo` entry point and `python -m bot` (run from /app) both use /app/bot,
# and the committed defaults sit beside it in /app/config.
COPY pyproject.toml README.md ./
COPY config/ ./config/
COPY bot/ ./bot/
RUN pip install -qq --no-deps -e . \
 && mkdir -p /app/workspace \
 && chown "${UID}:${GID}" /app/workspace

ENV BOT_WORKSPACE=/app/workspace
# A token Telegram rejects is not fixed by a restart: the bot says so once (its log, and
# `docker compose ps` / `python -m bot health`: unhealthy, with the reason) and waits, rather
# than exiting into `restart: unless-stopped`'s loop.
ENV MNEMO_ON_FATAL=wait
# How a person reaches the command line from the host: the hints the bot prints name it
# (`bot.shell`; replicated mode's compose file names its own service).
ENV MNEMO_SHELL="docker compose exec mnemo python -m bot"
VOLUME ["/app/workspace"]

# Numeric, so runtimes can verify it is not root.
USER ${UID}:${GID}

# Alive and polling: the bot touches state/heartbeat after every poll (no network call here).
# Every 60 s (each check starts a Python process). Docker 25 and newer also check every 5 s in
# the start period (their default start interval), so "healthy" comes with the first poll;
# the flag that would say so, --start-interval, is left out: Docker before 25 (and BuildKit's
# Dockerfile frontend before 1.6) refuses to build a Dockerfile that has it.
HEALTHCHECK --interval=60s --timeout=15s --start-period=60s --retries=3 \
    CMD ["python", "-m", "bot", "health"]

CMD ["python", "-m", "bot", "run"]
