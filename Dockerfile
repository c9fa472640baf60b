# syntax=docker/dockerfile:1
# Switchyard images. Two targets:
#   runtime (the default): the proxy alone, no anvil inside.
#     docker build --build-arg VERSION=$(node -p "require('./package.json').version") \
#       --build-arg COMMIT=$(git rev-parse --short=12 HEAD) -t switchyard .
#     docker run -v $PWD/my.yaml:/etc/switchyard/config.yaml:ro -p 8545:8545 switchyard
#   devnet: the same plus the anvil binary, for `devnet ...` and `start` (local fleets, compose).
#     docker build --target devnet -t switchyard-devnet .
# The config file is not baked in: mount one at /etc/switchyard/config.yaml (or pass --config).
# Node 22 LTS is the floor (package.json engines); the tests run on the same major (the `node`
# dev dependency), and the HTTP front's tests on the newest LTS as well.
# The devnet target is linux/amd64 only: package-lock.json pins anvil's linux-amd64 binary package.

ARG NODE_IMAGE=node:22-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
# No compiler: nothing in the dependencies is native (the uptime store is node:sqlite, built in).
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would run tsc before the sources are copied, anvil's postinstall is
# only a download fallback for platforms that have no prebuilt binary package, and the `node` dev
# dependency's preinstall would fetch a second Node: this image's own Node 22 runs the build.
RUN npm ci --ignore-scripts
COPY tsconfig.json ./
COPY src ./src
COPY scripts ./scripts
RUN npx tsc -p tsconfig.json
# The commit `switchyard --version` names: the build context has no .git, so pass it:
#   --build-arg COMMIT=$(git rev-parse --short=12 HEAD)
ARG COMMIT=unknown
RUN SWITCHYARD_COMMIT="${COMMIT}" node scripts/stamp-build.mjs
# anvil (an optional dependency) is set aside for the devnet target; the runtime stage copies
# production dependencies without it, and with the OpenTelemetry SDK (optional too), so tracing
# can be turned on in the image.
RUN mkdir -p /devnet/node_modules/@foundry-rs \
  && cp -r node_modules/@foundry-rs/anvil-linux-amd64 /devnet/node_modules/@foundry-rs/ \
  && npm prune --omit=dev && rm -rf node_modules/@foundry-rs && npm cache clean --force

FROM ${NODE_IMAGE} AS app
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="switchyard" \
      org.opencontainers.image.description="Ethereum JSON-RPC load balancer: one endpoint in front of a fleet of nodes of one chain" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="MIT"
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies from the build stage: plain JavaScript, nothing compiled.
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY config ./config
# uptime.store defaults to data/uptime.db under the working directory: writable by `node`. Mount a
# volume there to keep uptime history across container restarts.
RUN mkdir -p /etc/switchyard /app/data && chown node:node /app/data
VOLUME ["/app/data"]
# The node image's unprivileged user (uid 1000); nothing here needs root.
USER node
EXPOSE 8545 8546 9545
# /health on the admin port answers while the process is alive. The admin listener must be
# reachable on 127.0.0.1 inside the container (admin.host 127.0.0.1 or 0.0.0.0); set
# SWITCHYARD_ADMIN_PORT when admin.port is not 9545. No curl in the image: node's fetch does it.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.SWITCHYARD_ADMIN_PORT||9545)+'/health',{signal:AbortSignal.timeout(2500)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Open files: every client connection takes a descriptor. Switchyard reads its limit at start and,
# when it cannot hold server.maxConnections, warns and lowers the cap to fit. Node raises the soft
# limit to the hard one itself; where the runtime's hard limit is low, run with
# `--ulimit nofile=65536:65536` (compose: `ulimits: { nofile: 65536 }`).
ENTRYPOINT ["node", "--enable-source-maps", "--max-semi-space-size=8", "dist/main.js"]
CMD ["--config", "/etc/switchyard/config.yaml"]

# The devnet: the app plus the anvil binary package (`devnet --host 0.0.0.0 ...`, see compose.yaml).
FROM app AS devnet
COPY --from=build /devnet/node_modules/@foundry-rs ./node_modules/@foundry-rs
CMD ["devnet", "--host", "0.0.0.0"]

# Last, so a plain `docker build` makes it: the proxy alone.
FROM app AS runtime
