# syntax=docker/dockerfile:1
# Switchyard image: the proxy (`--config FILE`) and, from the same image, the devnet (`devnet ...`).
#   docker build -t switchyard .
#   docker run -v $PWD/my.yaml:/etc/switchyard/config.yaml:ro -p 8545:8545 switchyard
# The config file is not baked in: mount one at /etc/switchyard/config.yaml (or pass --config).
# linux/amd64 only: package-lock.json pins the anvil binary package for linux-amd64 (the devnet).

ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would run tsc before the sources are copied, and anvil's postinstall
# is only a download fallback for platforms that have no prebuilt binary package.
RUN npm ci --ignore-scripts
COPY tsconfig.json ./
COPY src ./src
RUN npx tsc -p tsconfig.json

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY config ./config
RUN mkdir -p /etc/switchyard
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
