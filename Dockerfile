# sunset in a container, for docker-compose.yml (docs/operations.md, "In Docker"). Built and run on Podman by
# `npm run test:containers`; the compose file's header gives the commands.
#
# The build reaches no npm registry: `npm run container:stage` first installs, on the host, what `npm pack` ships
# with its production dependencies, and the Claude Code CLI of the fleet's version, into .container-stage/ — the
# two folders copied below (or another staging folder: SUNSET_STAGE). Only Debian's archive is reached from inside,
# for tmux.

# the official image, named in full (Podman without short-name aliases cannot resolve node:20-…); another name
# here for a mirror, or for the stand-in `npm run container:base-images` builds
ARG NODE_IMAGE=docker.io/library/node:20-bookworm-slim
FROM ${NODE_IMAGE}

# tmux: the client that types /exit into a pane of the host's tmux server. Its protocol must be the server's:
# bookworm's tmux is 3.3a, so the host's should be too.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tmux \
 && rm -rf /var/lib/apt/lists/*

# tmux writes a tab in its -F output as "_" unless the locale is UTF-8, and sunset reads `list-panes -F` by tabs:
# without this, every interactive session reads no-pane. (The official node image sets no LANG.)
ENV LANG=C.UTF-8

# the staging folder in the build context (declared here, after apt's step: a RUN after an ARG misses the cache
# when the ARG's value changes): .container-stage, or another (`container:stage --out`; the container
# test stages into one of its own, so that it never builds from, or over, yours)
ARG SUNSET_STAGE=.container-stage

# the Claude Code CLI (`claude agents --json --all`, `claude stop`): the fleet's own version, staged on the host.
# Its own layer, before sunset's: a new sunset rebuilds only the layer below.
COPY ${SUNSET_STAGE}/claude/ /
RUN claude --version

# sunset as npm installs it: /usr/local/lib/node_modules/sunset, and /usr/local/bin/sunset linked to its cli
COPY ${SUNSET_STAGE}/sunset/ /

# The arguments are sunset's (`docker compose run --rm --no-deps sunset verdict` replaces `up`; `docker compose exec
# sunset sunset verdict` runs the bin itself in a running container). The command is the
# installed bin: its first line runs node with the options sunset's memory figures stand on
# (MALLOC_ARENA_MAX=2 node --max-semi-space-size=2 --optimize-for-size --max-opt=1 --expose-gc).
ENTRYPOINT ["sunset"]
CMD ["up"]
