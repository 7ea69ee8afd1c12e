// What the container test owns, and the check that it touched nothing else. Everything it makes carries its run's
// id — the image tag, the compose project (and with it the containers, volumes and networks), the staging folder —
// so an operator's own `sunset` image, compose project and .container-stage/ are never built over, run or removed.
// Before the first thing it makes, it takes the engine's footprint; after its cleanup (on failure too), the
// footprint must be the same again, and the operator's staging folder as it was.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Podman } from './engine.js';

export interface Footprint {
  /** kind → ids or names: containers (with Buildah's build containers), images (with intermediate ones), volumes,
   * networks, pods */
  items: Record<string, string[]>;
  /** The operator's staging folder, as a fingerprint: each file's path, size and mtime (or "absent"). */
  userStage: string;
}

const LISTS: Record<string, string[]> = {
  container: ['ps', '--all', '--external', '--no-trunc', '--format', '{{.ID}} {{.Names}}'],
  image: ['images', '--all', '--no-trunc', '--format', '{{.ID}} {{.Repository}}:{{.Tag}}'],
  volume: ['volume', 'ls', '--format', '{{.Name}}'],
  network: ['network', 'ls', '--format', '{{.Name}}'],
  pod: ['pod', 'ps', '--no-trunc', '--format', '{{.ID}} {{.Name}}'],
};

/** A folder's files, each with its size and mtime; "absent" when it is not there. */
function fingerprint(dir: string): string {
  if (!existsSync(dir)) return 'absent';
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else {
        const st = statSync(p, { throwIfNoEntry: false });
        out.push(`${p} ${st?.size} ${st?.mtimeMs}`);
      }
    }
  };
  walk(dir);
  const staged = join(dir, 'staged.json');
  return `${out.sort().join('\n')}\n${existsSync(staged) ? readFileSync(staged, 'utf8') : ''}`;
}

export async function footprint(podman: Podman, userStage: string): Promise<Footprint> {
  const items: Record<string, string[]> = {};
  for (const [kind, args] of Object.entries(LISTS)) {
    const r = await podman.podman(args);
    if (r.code !== 0) throw new Error(`podman ${args.join(' ')} exited ${r.code}: ${r.stderr.trim()}`);
    items[kind] = r.stdout.split('\n').filter(Boolean).sort();
  }
  return { items, userStage: fingerprint(userStage) };
}

/** What is there after and was not before (left behind), and what was there before and is gone (touched). */
export function compare(before: Footprint, after: Footprint): { left: string[]; gone: string[]; stageChanged: boolean } {
  const left: string[] = [];
  const gone: string[] = [];
  for (const kind of Object.keys(LISTS)) {
    const b = new Set(before.items[kind]);
    const a = new Set(after.items[kind]);
    for (const x of a) if (!b.has(x)) left.push(`${kind} ${x}`);
    for (const x of b) if (!a.has(x)) gone.push(`${kind} ${x}`);
  }
  return { left, gone, stageChanged: before.userStage !== after.userStage };
}

const idOf = (line: string) => line.split(' ')[0].replace(/^sha256:/, '');

/**
 * What this run's builds left in Podman's store, the tagged image aside: the intermediate images Podman keeps a
 * step for its cache (and, after a failed build, those of the steps that ran) and Buildah's working container of a
 * failed step. Ours: not in the store before, and an image whose parents lead to `base` — the stand-in this test
 * builds on, which nothing else builds on; a working container named for one of those images.
 */
export async function buildLeftovers(podman: Podman, before: Footprint, base: string): Promise<{ images: string[]; containers: string[] }> {
  const had = new Set(before.items.image.map(idOf));
  const imgs = await podman.podman(['images', '--all', '--no-trunc', '--format', '{{.ID}}']);
  const fresh = imgs.stdout
    .split('\n')
    .map(idOf)
    .filter((id) => /^[0-9a-f]{64}$/.test(id) && !had.has(id));
  const parent = new Map<string, string>();
  for (const id of fresh)
    parent.set(id, (await podman.podman(['image', 'inspect', '--format', '{{.Parent}}', id])).stdout.trim().replace(/^sha256:/, ''));
  const baseId = (await podman.podman(['image', 'inspect', '--format', '{{.Id}}', base])).stdout.trim().replace(/^sha256:/, '');
  const leadsToBase = (id: string): boolean => {
    for (let p = parent.get(id), n = 0; p && n < 100; p = parent.get(p), n++) if (p === baseId) return true;
    return false;
  };
  const images = fresh.filter(leadsToBase);
  const ctrs = await podman.podman(['ps', '--all', '--external', '--no-trunc', '--format', '{{.ID}} {{.Names}}']);
  const hadCtr = new Set(before.items.container);
  const containers = ctrs.stdout
    .split('\n')
    .filter((l) => l && !hadCtr.has(l))
    .filter((l) => {
      const m = /^\S+ ([0-9a-f]{12})-working-container$/.exec(l);
      return m !== null && images.some((id) => id.startsWith(m[1]));
    })
    .map((l) => l.split(' ')[0]);
  return { images, containers };
}

/** Remove them: the containers, then the images, each pass those no other image is built on, until none is left. */
export async function removeLeftovers(podman: Podman, left: { images: string[]; containers: string[] }): Promise<void> {
  for (const c of left.containers) await podman.podman(['rm', '--force', c]);
  let rest = [...left.images];
  while (rest.length) {
    const next: string[] = [];
    for (const id of rest) if ((await podman.podman(['image', 'rm', id])).code !== 0) next.push(id);
    if (next.length === rest.length) break; // used by something not ours: left, and check 5 says so
    rest = next;
  }
}
