# syntax=docker/dockerfile:1
# Switchyard image: the proxy (`--config FILE`) and, from the same image, the devnet (`devnet ...`).
#   docker build -t switchyard .
#   docker run -v $PWD/my.yaml:/etc/switchyard/config.yaml:ro -p 8545:8545 switchyard
# The config file is not baked in: mount one at /etc/switchyard/config.yaml (or pass --config).
# linux/amd64 only: package-lock.json pins the anvil binary package for linux-amd64 (the devnet).

ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
# better-sqlite3 (the uptime store) is a native addon: when no prebuilt binary can be fetched,
# node-gyp compiles it against this image's Node headers, which needs python3, make and g++.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
ENV npm_config_nodedir=/usr/local
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would run tsc before the sources are copied, and anvil's postinstall
# is only a download fallback for platforms that have no prebuilt binary package. The one install
# script that is needed, better-sqlite3's build, runs on its own.
RUN npm ci --ignore-scripts && npm rebuild better-sqlite3
COPY tsconfig.json ./
COPY src ./src
RUN npx tsc -p tsconfig.json
# What the runtime stage copies: production dependencies, the compiled addon among them.
RUN npm prune --omit=dev && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# Built in the build stage (same Node image, so the same addon ABI); no compilers in this image.
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
ENTRYPOINT ["node", "dist/main.js"]
CMD ["--config", "/etc/switchyard/config.yaml"]
