# Muster in a container: the compiled server (one self-contained binary, Bun inside)
# on a slim Debian. Build:  docker build -t muster .
# Run:    docker run -p 9800:9800 -p 9847:9847 -v muster-data:/data muster
# (PostgreSQL instead of the embedded SQLite file: -e SERVICE_DATABASE=postgres://…)

# ---- build: node for npm (the bun devDependency brings the compiler), then build.ts ----
FROM node:22-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# dist/muster-server and dist/muster (build.ts); the server build starts it once to learn its start order.
RUN npm run build

# ---- run: the server binary alone; it needs only glibc (TLS roots are built into Bun) ----
FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin muster \
 && mkdir -p /data && chown muster:muster /data
COPY --from=build /src/dist/muster-server /usr/local/bin/muster-server
# Listen on every interface inside the container; data (the SQLite file, backup staging) in the volume.
ENV SERVICE_BIND=0.0.0.0:9800 \
    SERVICE_DASHBOARD_BIND=0.0.0.0:9847 \
    SERVICE_DATA_DIR=/data
VOLUME ["/data"]
USER muster
WORKDIR /data
EXPOSE 9800 9847
# The slim image has no curl: the binary itself, run as plain Bun (BUN_BE_BUN=1), asks /readyz on
# the API port (from SERVICE_BIND), so "healthy" means it can serve: database reachable, migrations done.
HEALTHCHECK --interval=15s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/bin/env", "BUN_BE_BUN=1", "/usr/local/bin/muster-server", "-e", "const port = (process.env.SERVICE_BIND ?? ':9800').split(':').pop(); const r = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null); process.exit(r?.ok ? 0 : 1)"]
ENTRYPOINT ["/usr/local/bin/muster-server"]
