# sunset in a container, for docker-compose.yml (see docs/operations.md, "In Docker"). Written and checked by
# reading: docker cannot run where this was built. The image carries node, the compiled sunset, tmux (the
# client must speak the host tmux server's protocol: keep the versions equal) and the claude CLI (its
# `claude agents` / `claude stop` must match the host's Claude Code: pin CLAUDE_CODE_VERSION to it).

# --- build: compile TypeScript with the dev dependencies, then keep only the runtime ones
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY queues ./queues
COPY workers ./workers
COPY test/fleet ./test/fleet
RUN npm run build && npm prune --omit=dev

# --- run
FROM node:20-bookworm-slim
ARG CLAUDE_CODE_VERSION=latest
RUN apt-get update \
 && apt-get install -y --no-install-recommends tmux procps ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && npm install -g --no-audit --no-fund "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}" \
 && npm cache clean --force
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# the stand-in fleet scripts, for `sunset demo` only
COPY --from=build /app/test/fleet ./test/fleet
COPY docs ./docs
# run as the user who owns ~/.claude (docker-compose.yml sets user: to your uid:gid)
# the arguments are sunset's: `docker run … IMAGE verdict` replaces CMD. Without --config a verb reads
# $SUNSET_CONFIG, which docker-compose.yml sets to the mounted config — else ./sunset.config.json in /app
# (there is none) and the defaults.
ENTRYPOINT ["node", "/app/dist/src/cli.js"]
CMD ["up"]
