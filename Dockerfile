# Worker image for the durable agent (see docker-compose.yml).
#
# Debian (glibc) rather than Alpine: the Temporal SDK's native core bridge and
# the other prebuilt binaries in package-lock.json are built for glibc.
FROM node:22-bookworm-slim

WORKDIR /app

ENV NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false

# Dependencies first, so source edits reuse this layer. The full tree is kept:
# `npm start` runs the TypeScript sources through tsx, a dev dependency.
COPY package.json package-lock.json ./
RUN npm ci && npm cache clean --force

COPY . .

# Runtime state (AGENT_DATA_DIR); docker-compose.yml mounts a volume here, and
# a fresh named volume takes over this directory's ownership.
RUN mkdir -p /data && chown node:node /data
ENV AGENT_DATA_DIR=/data

USER node

CMD ["npm", "start"]
