#!/usr/bin/env node
// What `npm test` needs beyond `npm install`: redis-server, tmux, Chromium (the browser tests) and util-linux's
// `script` (a pty for tmux clients). As root on a Debian-like box with apt-get, the missing ones are installed;
// otherwise the first line printed names the one command that installs them, and the tests do not start.
// (The real Claude Code CLI is installed by the tests themselves, into a cache outside the repo.)
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const NEEDS = [
  { pkg: 'redis-server', has: () => onPath('redis-server') },
  { pkg: 'tmux', has: () => onPath('tmux') },
  { pkg: 'chromium', has: () => onPath('chromium') || existsSync('/usr/bin/chromium') },
  { pkg: 'bsdutils', has: () => onPath('script') },
];

function onPath(cmd) {
  return spawnSync('sh', ['-c', 'command -v "$1"', 'sh', cmd], { stdio: 'ignore' }).status === 0;
}

// `preflight.mjs demo`: the demo needs only tmux and redis-server
const wanted = process.argv[2] === 'demo' ? NEEDS.filter((n) => n.pkg === 'tmux' || n.pkg === 'redis-server') : NEEDS;
const missing = wanted.filter((n) => !n.has()).map((n) => n.pkg);
if (!missing.length) process.exit(0);

const line = `apt-get install -y ${missing.join(' ')}`;
const root = process.getuid?.() === 0;
if (!root || !onPath('apt-get')) {
  console.error(
    `sunset ${process.argv[2] === 'demo' ? 'demo needs' : 'tests need'} ${missing.join(', ')}: install ${missing.length === 1 ? 'it' : 'them'} with \`sudo ${line}\` (or your system's packages of the same names), then run npm test again`,
  );
  process.exit(1);
}
console.error(`sunset tests: installing ${missing.join(', ')} (${line})`);
const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
const update = spawnSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'], env });
const install =
  update.status === 0
    ? spawnSync('apt-get', ['install', '-y', '-qq', ...missing], { stdio: ['ignore', 'ignore', 'inherit'], env })
    : update;
const still = wanted.filter((n) => !n.has()).map((n) => n.pkg);
if (install.status !== 0 || still.length) {
  console.error(
    `sunset tests: could not install ${still.join(', ') || missing.join(', ')} (apt-get exited ${install.status}); install by hand: sudo ${line}`,
  );
  process.exit(1);
}
