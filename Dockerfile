# Worker image for the durable agent (see docker-compose.yml).
#
# Debian (glibc) rather than Alpine: the Temporal SDK's native core bridge and
# the other prebuilt binaries in package-lock.json are built for glibc.
FROM node:24-bookworm-slim

WORKDIR /app

ENV NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false

# Dependencies first, so source edits reuse this layer. The full tree is kept:
# the compiler that builds the worker is a dev dependency.
# `npm install` rather than `npm ci`: the lockfile was written against a registry
# mirror that lacks some other platforms' optional binaries, which `npm ci`
# treats as a mismatch; `npm install` keeps the locked versions.
COPY package.json package-lock.json ./
RUN npm install && npm cache clean --force

COPY . .

# The worker, its API and its CLI compiled to JavaScript (build/): run without
# tsx, the worker process holds about 50 MiB less (docs/performance.md).
RUN npm run build:app

# Runtime state (AGENT_DATA_DIR); docker-compose.yml mounts a volume here, and
# a fresh named volume takes over this directory's ownership.
RUN mkdir -p /data && chown node:node /data
ENV AGENT_DATA_DIR=/data

USER node

CMD ["npm", "run", "start:compiled"]
