# Mnemo — the image holds code only; all state lives in the /app/workspace volume.
#
#   docker build -t mnemo .
#   docker run --env-file .env -v "$PWD/workspace:/app/workspace" mnemo
#
# (or `docker compose up -d`, see docker-compose.yml)
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

# Unprivileged runtime user; it owns the workspace and nothing else.
RUN groupadd --system --gid 10001 mnemo \
 && useradd --system --uid 10001 --gid mnemo --home-dir /app --no-create-home \
        --shell /usr/sbin/nologin mnemo

WORKDIR /app

# Dependencies first: this layer is rebuilt only when the lock changes.
# The lock carries hashes, so pip installs in --require-hashes mode.
COPY requirements.lock ./
RUN pip install -r requirements.lock

# Then the code (root-owned, read-only for the runtime user). Editable install:
# the `mnemo` entry point and `python -m bot` (run from /app) both use /app/bot,
# and the committed defaults sit beside it in /app/config.
COPY pyproject.toml README.md ./
COPY config/ ./config/
COPY bot/ ./bot/
RUN pip install --no-deps -e . \
 && mkdir -p /app/workspace \
 && chown mnemo:mnemo /app/workspace

ENV BOT_WORKSPACE=/app/workspace
VOLUME ["/app/workspace"]

# Numeric (= mnemo) so runtimes can verify it is not root.
USER 10001:10001

CMD ["python", "-m", "bot", "run"]
