# syntax=docker/dockerfile:1
# kubetrain operator image: `kubetrain run` (controller + admission webhooks).
#
#   docker build -t ghcr.io/kubetrain/kubetrain:0.1.0 .
#
# Two stages: the builder turns the source tree into a wheel and installs it with its runtime
# dependencies into a virtualenv; the final stage copies only that virtualenv onto the same
# slim Python base (same interpreter path, so the venv stays valid). No compiler, no pip, no
# source tree and no test/dev dependency reaches the final image. Pin the base image by digest
# in your registry mirror if you need reproducible builds (`python:3.11.13-slim-bookworm@sha256:…`).
ARG PYTHON_IMAGE=python:3.11.13-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY kubetrain ./kubetrain
RUN python -m pip wheel --no-deps --wheel-dir /wheels . \
 && python -m venv /opt/kubetrain \
 && /opt/kubetrain/bin/pip install /wheels/kubetrain-*.whl \
 && /opt/kubetrain/bin/pip uninstall --yes pip \
 && /opt/kubetrain/bin/kubetrain --help >/dev/null

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="kubetrain" \
      org.opencontainers.image.description="Kubernetes operator and admission webhooks for distributed ML training jobs" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/kubetrain/kubetrain"
ENV PATH=/opt/kubetrain/bin:${PATH} \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
COPY --from=builder /opt/kubetrain /opt/kubetrain
# Numeric non-root user (Pod Security "restricted" checks runAsNonRoot against a numeric UID).
# Nothing is written outside /tmp, which the chart mounts as an emptyDir under a read-only root.
USER 65532:65532
WORKDIR /tmp
# 8080: /metrics /healthz /readyz (plain HTTP); 9443: admission webhooks (HTTPS).
EXPOSE 8080 9443
ENTRYPOINT ["kubetrain"]
CMD ["run"]
