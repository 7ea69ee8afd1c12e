// sunset as a user installs it, without the checkout: `npm pack` of this checkout (the build `npm test` has
// just done: `npm run build` first when running this file alone), the tarball installed with
// `npm install -g --prefix <temp> --omit=dev`, and the installed `<prefix>/bin/sunset` run from a folder
// outside the checkout, with an environment that names nothing of it (no npm_* variables, no checkout
// folder on PATH). npm reaches the registry for the dependencies (--prefer-offline: its cache first).
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, realpathSync, writeFileSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { run, type Ran } from './support/cli.js';
import { tempDir } from './support/temp-dir.js';
import { useFleet } from './support/use-fleet.js';
import { NODE_ENV, NODE_OPTIONS } from '../src/cli/service.js';

const H = 3_600_000;
const ROOT = realpathSync(fileURLToPath(new URL('..', import.meta.url)));
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const SETUP_MS = 240_000;

const tmp = realpathSync(tempDir('sunset-package-'));
const prefix = join(tmp, 'prefix');
const installed = join(prefix, 'lib', 'node_modules', 'sunset');
const bin = join(prefix, 'bin', 'sunset');
const away = join(tmp, 'elsewhere'); // the working directory: outside the checkout

/**
 * This environment, less what ties it to the checkout: npm's variables (`npm test` sets them), its PATH entries;
 * and less what would give node sunset's options (the bin must). Removed keys are undefined: spawn leaves them out.
 */
function bareEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env))
    if (/^npm_/i.test(k) || ['SUNSET_CONFIG', 'MALLOC_ARENA_MAX', 'NODE_OPTIONS'].includes(k)) env[k] = undefined;
  env.PATH = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((d) => d && !resolve(d).startsWith(`${ROOT}/`))
    .join(delimiter);
  return { ...env, ...extra };
}

function npm(args: string[], cwd: string) {
  const r = spawnSync('npm', args, { cwd, env: bareEnv(), encoding: 'utf8', timeout: SETUP_MS - 10_000 });
  if (r.status !== 0) throw new Error(`npm ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr || r.error}`);
  return r.stdout;
}

/** `<prefix>/bin/sunset <args>` as typed in a shell: the bin itself (its shebang picks node), cwd outside the checkout. */
const sunset = (args: string[], o: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<Ran> =>
  run(bin, args, { cwd: away, env: bareEnv(o.env), timeoutMs: o.timeoutMs ?? 60_000 });

let packed: { filename: string; files: Array<{ path: string }> };
const timings: Record<string, number> = {};

beforeAll(() => {
  if (!existsSync(join(ROOT, 'dist', 'src', 'cli.js'))) throw new Error('no dist/src/cli.js: `npm run build` first');
  for (const d of [away, join(tmp, 'pack')]) mkdirSync(d, { recursive: true });
  // --ignore-scripts: the build is done (prepack would empty dist/ under the test files running beside this one)
  let t = Date.now();
  packed = JSON.parse(npm(['pack', '--ignore-scripts', '--json', '--pack-destination', join(tmp, 'pack')], ROOT))[0];
  timings.pack = Date.now() - t;
  t = Date.now();
  npm(
    ['install', '-g', '--prefix', prefix, join(tmp, 'pack', packed.filename), '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline'],
    away,
  );
  timings.install = Date.now() - t;
}, SETUP_MS);

describe('the packed tarball', () => {
  it('holds what runs (the compiled cli and pipeline, the demo fleet) and the docs; no tests, benches, chaos, sources or maps', () => {
    const paths = packed.files.map((f) => f.path);
    for (const p of [
      'package.json',
      'README.md',
      'dist/src/cli.js',
      'dist/src/cli/hook-event.js',
      'dist/queues/session-exit.js',
      'dist/workers/session-exit.js',
      'dist/sim/fleet/fleet.js',
      'sim/fleet/claude.mjs',
      'sim/fleet/agent.mjs',
      'sim/fleet/codex.mjs',
      'docs/operations.md',
    ])
      expect(paths, p).toContain(p);
    expect(
      paths.filter(
        (p) =>
          /^(test|bench|chaos|scripts|src|queues|workers|sim\/real|dist\/(test|bench|chaos|sim\/real))\//.test(p) || /\.(ts|map)$/.test(p),
      ),
    ).toEqual([]);
    expect(packed.filename).toBe(`sunset-${PKG.version}.tgz`);
  });

  it('installs into an empty prefix: `sunset` on its PATH, runtime dependencies only, nothing of the checkout', () => {
    expect(lstatSync(bin).isSymbolicLink()).toBe(true);
    expect(realpathSync(bin)).toBe(join(installed, 'dist', 'src', 'cli.js'));
    expect(readlinkSync(bin)).not.toContain(ROOT);
    expect(lstatSync(installed).isSymbolicLink()).toBe(false); // a copy, not a link back into the checkout
    expect(readdirSync(installed).sort()).toEqual(['LICENSE', 'README.md', 'dist', 'docs', 'node_modules', 'package.json', 'sim']);
    const deps = readdirSync(join(installed, 'node_modules'));
    for (const dep of Object.keys(PKG.dependencies)) expect(existsSync(join(installed, 'node_modules', dep)), dep).toBe(true);
    for (const dev of Object.keys(PKG.devDependencies)) expect(deps, dev).not.toContain(dev.split('/')[0]);
    // the shebang that gives node sunset's options survived the packing
    expect(readFileSync(join(installed, 'dist', 'src', 'cli.js'), 'utf8').split('\n', 1)[0]).toBe(
      readFileSync(join(ROOT, 'src', 'cli.ts'), 'utf8').split('\n', 1)[0],
    );
  });
});

describe('the installed sunset, run from outside the checkout', () => {
  const ctx = useFleet();

  it('--version and -V print the version; --verbose shows the installed package and node run with the options', async () => {
    for (const flag of ['--version', '-V']) expect(await sunset([flag])).toEqual({ code: 0, stdout: `${PKG.version}\n`, stderr: '' });
    // MALLOC_ARENA_MAX and NODE_OPTIONS are not in the environment it is given: all comes from the bin's shebang
    const v = await sunset(['--version', '--verbose']);
    expect(v.code).toBe(0);
    expect(v.stdout).toContain(`sunset ${PKG.version}\n`);
    expect(v.stdout).toMatch(new RegExp(`^  package at +${installed}$`, 'm'));
    expect(v.stdout).toMatch(/^ {2}node options {2}(?!missing)/m);
    for (const opt of [...NODE_ENV, ...NODE_OPTIONS]) expect(v.stdout).toContain(opt);
    expect((await sunset(['--version', 'now'])).code).toBe(2);
  });

  it('--help lists the verbs and --version', async () => {
    const h = await sunset(['--help']);
    expect(h.code).toBe(0);
    for (const verb of ['up', 'verdict', 'exit', 'report', 'service', 'demo']) expect(h.stdout).toMatch(new RegExp(`^  ${verb} `, 'm'));
    expect(h.stdout).toMatch(/--version, -V/);
  });

  it('verdict --json judges the test fleet', async () => {
    const done = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 't-done', state: 'done', sessionId: done.sessionId, releasedAt: new Date(Date.now() - H).toISOString() });
    const waiting = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 't-waiting', state: 'awaiting-human', sessionId: waiting.sessionId });
    const r = await sunset(['verdict', '--json', '--config', ctx.fleet.writeConfig()]);
    expect(r.code).toBe(0);
    const json = JSON.parse(r.stdout);
    const by = (sessionId: string) => json.sessions.find((s: any) => s.sessionId === sessionId);
    expect(by(done.sessionId)).toMatchObject({ verdict: 'eligible', reasons: [], taskId: 't-done', live: true });
    expect(by(waiting.sessionId)).toMatchObject({ verdict: 'protected', reasons: ['task-not-terminal'], taskId: 't-waiting' });
  });

  it('service print and hooks install write the installed paths: its cli, its hook script, its docs — not the checkout', async () => {
    const cfg = join(tmp, 'sunset.config.json');
    writeFileSync(cfg, JSON.stringify({ stateDir: join(tmp, 'state') }));
    const s = await sunset(['service', 'print', '--config', cfg]);
    expect(s.code).toBe(0);
    const node = /^ {2}node +\S+ (\S+)$/m.exec((await sunset(['-V', '-v'])).stdout)![1];
    expect(s.stdout).toContain(
      `ExecStart=${node} ${NODE_OPTIONS.join(' ')} ${join(installed, 'dist', 'src', 'cli.js')} up --config ${cfg}\n`,
    );
    expect(s.stdout).toContain(`Documentation=file://${join(installed, 'docs', 'operations.md')}\n`);
    expect(existsSync(join(installed, 'docs', 'operations.md'))).toBe(true);
    expect(s.stdout).toMatch(/npx --yes pino-pretty/); // not installed with sunset
    expect(s.stdout).not.toContain(ROOT);

    const settings = join(tmp, 'claude-settings.json');
    const h = await sunset(['hooks', 'install', '--settings', settings, '--config', cfg]);
    expect(h.code, h.stderr).toBe(0);
    const text = readFileSync(settings, 'utf8');
    expect(text).toContain(join(installed, 'dist', 'src', 'cli', 'hook-event.js'));
    expect(text).not.toContain(ROOT);
  });

  it('demo runs its simulated fleet from the installed files to the end', async () => {
    const t = Date.now();
    const d = await sunset(['demo'], { env: { REDIS_URL: process.env.REDIS_URL }, timeoutMs: 170_000 });
    timings.demo = Date.now() - t;
    expect(d.code, d.stderr).toBe(0);
    expect(d.stdout).toMatch(/exited by their own path: [1-9]/);
    // the stand-in Codex session (sim/fleet/codex.mjs, installed executable), read by the real Codex adapter
    expect(d.stdout).toMatch(/ codex: asked once to wrap up \(a message typed into its pane\)/);
    expect(d.stdout).toMatch(/ codex: left by its own exit path \(`\/quit` typed into its pane\)/);
    expect(d.stdout).toMatch(/exited by their own path: \d+ \(.*\bcodex\b/);
    expect(d.stdout).toContain('signals received by any agent: 0');
    expect(d.stdout).toContain(`${join(installed, 'docs')}/ for the rest`);
    expect(d.stdout).toMatch(/The demo has ended: its pages, its queues and its fleet are gone/);
    console.log(`package test: npm pack ${timings.pack} ms, npm install -g ${timings.install} ms, demo ${timings.demo} ms`);
  }, 180_000);
});
