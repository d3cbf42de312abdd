# syntax=docker/dockerfile:1
# Multi-stage: compile with dev dependencies, run with production ones only.

FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: nothing needs a build step at install time (msgpackr falls back to plain JS).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM node:24-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
# tini as PID 1 forwards SIGTERM to Node and reaps zombies, so graceful shutdown works.
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY bin ./bin
RUN mkdir -p /app/data/audio /app/data/sandbox && chown -R node:node /app/data
USER node
# Every interface: the load balancer, the compose network and the probes reach the container from
# outside it (the service's own default is loopback).
ENV PORT=3000 HOST=0.0.0.0 AUDIO_DIR=/app/data/audio
# 3000: the deliveries (PORT); 9464: metrics and the dashboard when INTERNAL_PORT=9464 (compose, Kubernetes)
EXPOSE 3000 9464
# Liveness only; the load balancer should use /readyz. Node's fetch: the slim image has no curl.
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+process.env.PORT+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/main.js"]
