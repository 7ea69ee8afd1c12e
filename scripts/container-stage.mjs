#!/usr/bin/env node
// What the Dockerfile copies into the image, built on this machine: the build itself reaches no npm registry
// (where a registry answers the host but not a container, or only through the host's proxy, an image that runs
// `npm ci` inside cannot be built). Two folders under .container-stage/, each laid out as the image's / :
//
//   claude/usr/local/bin/claude          the Claude Code CLI of the version the fleet runs (one native binary)
//   sunset/usr/local/lib/node_modules/sunset, sunset/usr/local/bin/sunset
//                                        `npm pack` of this checkout installed with its production dependencies
//                                        (npm install -g --prefix …): what the package ships, not a list of folders
//
// usage: node scripts/container-stage.mjs [--claude-version V | --claude-binary FILE] [--out DIR]
//   --out: another staging folder than .container-stage; the Dockerfile copies it when it is in the checkout and
//   named .container-stage* (.dockerignore admits no other), given as SUNSET_STAGE=<its name> to `docker compose build`.
//   the CLI's version: --claude-version, else the version of the `claude` on PATH (the fleet's own, when sunset runs
//   on the fleet's host); --claude-binary takes an installed binary as it is (its --version must answer).
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGE = '@anthropic-ai/claude-code';
const VERSION_OK = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/;
const USAGE = 'usage: node scripts/container-stage.mjs [--claude-version V | --claude-binary FILE] [--out DIR]';

class Failure extends Error {}

function parseArgs(argv) {
  const o = { out: join(ROOT, '.container-stage'), claudeVersion: null, claudeBinary: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) throw new Failure(`${a} needs a value\n${USAGE}`);
      return v;
    };
    if (a === '--out') o.out = resolve(value());
    else if (a === '--claude-version') o.claudeVersion = value();
    else if (a === '--claude-binary') o.claudeBinary = resolve(value());
    else if (a === '--help' || a === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else throw new Failure(`unknown argument ${JSON.stringify(a)}\n${USAGE}`);
  }
  const rel = relative(ROOT, o.out);
  if (rel.startsWith('..') || isAbsolute(rel) || !/^\.container-stage[^/]*$/.test(rel))
    console.log(
      `stage: note: ${o.out} is not a folder .container-stage* at the top of ${ROOT}: the image cannot be built from it (.dockerignore)`,
    );
  if (o.claudeVersion && o.claudeBinary) throw new Failure(`give --claude-version or --claude-binary, not both\n${USAGE}`);
  if (o.claudeVersion && !VERSION_OK.test(o.claudeVersion))
    throw new Failure(`--claude-version ${JSON.stringify(o.claudeVersion)} is not a version such as 2.1.328`);
  return o;
}

/** Run a command (argv, no shell) to its end; throw with what it said when it fails. */
function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...opts });
  if (r.error) throw new Failure(`${cmd} ${args.join(' ')}: ${r.error.message}`);
  if (r.status !== 0)
    throw new Failure(
      `${cmd} ${args.join(' ')} exited ${r.status ?? r.signal}:\n${(r.stderr || r.stdout).trim().split('\n').slice(-12).join('\n')}`,
    );
  return r.stdout;
}

/** "2.1.328 (Claude Code)" → "2.1.328", from a private empty HOME so that nothing of the real ~/.claude is touched. */
function claudeVersionOf(binary) {
  const home = mkdtempSync(join(tmpdir(), 'sunset-stage-home-'));
  try {
    const out = run(binary, ['--version'], {
      env: { PATH: process.env.PATH, HOME: home, DISABLE_AUTOUPDATER: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' },
      cwd: home,
      timeout: 60_000,
    });
    const v = out.trim().split(/\s+/)[0];
    if (!VERSION_OK.test(v)) throw new Failure(`${binary} --version printed ${JSON.stringify(out.trim())}: no version in it`);
    return v;
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/** The binary of `version`, installed with npm into the cache the real-client tests use (one install a machine). */
function claudeBinaryOf(version) {
  const cache = process.env.SUNSET_CLAUDE_CODE_CACHE?.trim() || join(homedir(), '.cache', 'sunset-claude-code');
  const dir = join(cache, version);
  const binary = join(dir, 'node_modules', '@anthropic-ai', 'claude-code', 'bin', 'claude.exe');
  if (existsSync(binary) && claudeVersionOf(binary) === version) return binary;
  console.log(`stage: installing ${PACKAGE}@${version} into ${dir} (a native binary of ~370 MB)`);
  const tmp = `${dir}.stage-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  try {
    run(
      'npm',
      [
        'install',
        '--prefix',
        tmp,
        '--no-save',
        '--no-package-lock',
        '--no-audit',
        '--no-fund',
        '--loglevel=error',
        `${PACKAGE}@${version}`,
      ],
      { cwd: tmp },
    );
    const got = join(tmp, 'node_modules', '@anthropic-ai', 'claude-code', 'bin', 'claude.exe');
    if (claudeVersionOf(got) !== version) throw new Failure(`${PACKAGE}@${version} installed, but its binary answers another version`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
    return binary;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** The fleet's version: the `claude` on PATH. */
function pathClaudeVersion() {
  const found = spawnSync('sh', ['-c', 'command -v claude'], { encoding: 'utf8' });
  if (found.status !== 0)
    throw new Failure(
      "no `claude` on PATH to take the fleet's version from: name it with --claude-version (what `claude --version` prints on the fleet's host)",
    );
  return claudeVersionOf(found.stdout.trim());
}

/** Hard-link when on the same file system (370 MB not copied), else copy. */
function place(src, dest) {
  mkdirSync(dirname(dest), { recursive: true });
  rmSync(dest, { force: true });
  try {
    linkSync(src, dest);
  } catch {
    copyFileSync(src, dest);
  }
}

function stageClaude(o) {
  let binary = o.claudeBinary;
  let version;
  if (binary) version = claudeVersionOf(binary);
  else {
    version = o.claudeVersion ?? pathClaudeVersion();
    binary = claudeBinaryOf(version);
  }
  place(binary, join(o.out, 'claude', 'usr', 'local', 'bin', 'claude'));
  return version;
}

function stageSunset(o) {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const packDir = mkdtempSync(join(tmpdir(), 'sunset-stage-pack-'));
  try {
    // npm pack runs the package's prepack (a fresh build) and ships what package.json's "files" names
    const packed = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', packDir], { cwd: ROOT }))[0];
    const files = packed.files.map((f) => f.path);
    const bin = String(pkg.bin?.sunset ?? '').replace(/^\.\//, '');
    if (!bin || !files.includes(bin))
      throw new Failure(
        `npm pack shipped no ${bin || 'bin'}: package.json's "files" must name what runs (see docs/operations.md, "Install")`,
      );
    const prefix = join(o.out, 'sunset', 'usr', 'local');
    rmSync(join(o.out, 'sunset'), { recursive: true, force: true });
    mkdirSync(prefix, { recursive: true });
    run(
      'npm',
      [
        'install',
        '-g',
        '--prefix',
        prefix,
        join(packDir, packed.filename),
        '--omit=dev',
        '--no-audit',
        '--no-fund',
        '--prefer-offline',
        '--loglevel=error',
      ],
      { cwd: packDir },
    );
    if (!existsSync(join(prefix, 'bin', 'sunset'))) throw new Failure(`npm install -g put no bin/sunset in ${prefix}`);
    return { version: pkg.version, files: files.length };
  } finally {
    rmSync(packDir, { recursive: true, force: true });
  }
}

function main() {
  const o = parseArgs(process.argv.slice(2));
  const t0 = Date.now();
  const claude = stageClaude(o);
  const sunset = stageSunset(o);
  const staged = { sunset: sunset.version, claudeCode: claude, node: process.version, at: new Date().toISOString() };
  // beside the two folders, not in them: the Dockerfile copies the folders only, so this file never
  // changes a layer
  writeFileSync(join(o.out, 'staged.json'), `${JSON.stringify(staged, null, 2)}\n`);
  console.log(
    `stage: sunset ${sunset.version} (${sunset.files} files packed) and Claude Code ${claude} in ${o.out}, ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
  if (process.version.split('.')[0] !== 'v20') console.log(`stage: note: installed with node ${process.version}; the image runs node 20`);
}

try {
  main();
} catch (e) {
  if (!(e instanceof Failure)) throw e;
  console.error(`stage: ${e.message}`);
  process.exit(1);
}
