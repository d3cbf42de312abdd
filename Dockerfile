# syntax=docker/dockerfile:1
# Multi-stage: compile with dev dependencies, install the production ones apart, and run with
# what the service uses and nothing else. test/deploy/image-filesystem.test.ts builds these
# stages' file system without an engine and starts each ROLE from it.

# The base image of every stage, by digest: a tag such as node:24-slim is pushed again with every
# Node and Debian patch, a digest names one image for good, so a rebuild runs what was tested.
# To update: `docker buildx imagetools inspect node:24-slim` (or `skopeo inspect
# docker://docker.io/library/node:24-slim`, `crane digest node:24-slim`) prints the digest of the
# tag's multi-platform index now; put it here, build, and run the tests before you commit it.
# `--build-arg NODE_IMAGE=…` builds on another without editing this file.
ARG NODE_IMAGE=node:24-slim@sha256:a9f5f7c91a432850b2a8a7797adf5eadb6c733ceed61167806cee7ea7fbc29df

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: nothing needs a build step at install time (msgpackr falls back to plain JS).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# Without source maps, which would point at src/ where the runtime image has none (and Node reads
# none without --enable-source-maps), and without declarations, which are for a compiler.
RUN npm run build -- --sourceMap false --declaration false

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# valibot (under @bull-board/api) names TypeScript as an optional peer, for its types, so npm keeps
# the compiler (24 MB) whatever --omit says short of dropping every optional package, msgpackr's
# prebuilt native addon among them. Nothing loads it at run time.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
  && rm -rf node_modules/typescript node_modules/.bin/tsc node_modules/.bin/tsserver

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
# tini as PID 1 forwards SIGTERM to Node and reaps zombies, so graceful shutdown works. npm, npx,
# corepack and yarn come with the base image and nothing here runs them (the packages come from
# the deps stage; the CLI is `node bin/audio-webhooks.js`): out, with what they would bring.
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/* \
  && rm -rf /usr/local/lib/node_modules /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-*
# package.json: the version the start-up line reports.
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin
RUN mkdir -p /app/data/audio /app/data/sandbox \
  && chown -R node:node /app/data
USER node
# Every interface: the load balancer, the compose network and the probes reach the container from
# outside it (the service's own default is loopback). A worker serves its liveness and metrics on
# WORKER_HEALTH_PORT, which the HEALTHCHECK below probes.
ENV PORT=3000 HOST=0.0.0.0 AUDIO_DIR=/app/data/audio WORKER_HEALTH_PORT=9000
# 3000: the deliveries (PORT); 9000: a worker's /healthz and /metrics (WORKER_HEALTH_PORT);
# 9464: metrics and the dashboard when INTERNAL_PORT=9464 (compose, Kubernetes)
EXPOSE 3000 9000 9464
# Liveness only (the load balancer should use /readyz), of what this ROLE serves: /healthz on PORT
# for web and all, on WORKER_HEALTH_PORT for worker and all (a worker opens no PORT). Node's
# fetch: the slim image has no curl.
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "const e=process.env,r=e.ROLE||'all',p=[];if(r!=='worker')p.push(e.PORT||3000);if(r!=='web'&&e.WORKER_HEALTH_PORT)p.push(e.WORKER_HEALTH_PORT);Promise.all(p.map(n=>fetch('http://127.0.0.1:'+n+'/healthz').then(s=>{if(!s.ok)throw s.status}))).then(()=>process.exit(0),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/main.js"]
