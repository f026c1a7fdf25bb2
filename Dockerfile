# syntax=docker/dockerfile:1
# One image for the API (the default command) and the worker (`npm run worker`), built with the
# README's production commands: install everything, build dist/, drop the dev dependencies.
#   docker build -t workspace-ai .
#   docker run -p 8000:8000 -v wsai-data:/app/data workspace-ai        (embedded profile)
#   docker compose up                                                  (distributed: compose.yaml)
# CI runs the suite on this Node line (IMAGE_NODE_VERSION in .ci/run, which fails when the two
# disagree) besides the machine's Node 20. Node 26 (active LTS since October 2026) is a change
# here and in .ci/run once the suite has run on it: --build-arg NODE_IMAGE=node:26-bookworm-slim.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
# Dependencies first, so that a change in src/ reuses this layer.
COPY package.json package-lock.json ./
RUN npm ci --include=dev
COPY . .
RUN npm run build && npm prune --omit=dev

FROM ${NODE_IMAGE} AS runtime
WORKDIR /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8000 \
    DATA_DIR=/app/data \
    NPM_CONFIG_UPDATE_NOTIFIER=false
# Only what runs: production dependencies, the built dist/ (with its build stamp), the migrations
# and the scripts. No src/: scripts/ensure-build.mjs then uses dist/ as shipped and never builds.
# The files stay owned by root (read-only to the service); only DATA_DIR is writable.
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/drizzle ./drizzle
COPY --from=build /app/scripts ./scripts
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 CMD ["node", "scripts/healthcheck.mjs"]
CMD ["npm", "start"]
