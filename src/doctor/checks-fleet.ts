// `sunset doctor`'s checks of what sunset talks to: Redis, tmux, the claude CLI and its files, the tasks folder.
import { accessSync, constants, existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { errorCode, errorMessage } from '../errors.js';
import { TESTED_VERSIONS, parseVersion, readPins } from '../evidence/claude-code.js';
import { tmuxArgv } from '../evidence/tmux.js';
import { clusterNodes, redisAddress } from '../redis.js';
import { findRedisServer, installLine, pingOnce, pingSocket, privatePaths } from '../redis/private-server.js';
import { run } from '../run.js';
import { type DoctorContext, type Finding, fail, ok, warn, why } from './finding.js';
import { whichFile } from '../which.js';
import { agentsRead } from '../agents/clis.js';

/** A Redis URL for people: its password never shown. */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(not a URL)';
  }
}

// ------------------------------------------------------------------ Redis

export async function checkRedis({ config: c, env, timeoutMs }: DoctorContext): Promise<Finding> {
  if (c.redisCluster) {
    const { nodes, redisOptions } = clusterNodes(c.redisCluster);
    for (const n of nodes as Array<{ host: string; port: number }>)
      if ((await pingOnce({ ...redisOptions, host: n.host, port: n.port }, timeoutMs)) === 'pong')
        return ok(`the Redis Cluster answers (seed ${n.host}:${n.port})`);
    return fail(`no seed node of redisCluster answers (${c.redisCluster.join(', ')})`, 'start the Cluster, or fix redisCluster');
  }
  const where = safeUrl(c.redisUrl);
  if (c.privateRedis === 'never') {
    const r = await pingOnce(redisAddress(c.redisUrl), timeoutMs);
    if (r === 'pong') return ok(`Redis answers at ${where}`);
    if (r === 'reply')
      return fail(
        `Redis at ${where} answers PING with an error`,
        'check its password (redisUrl, $REDIS_URL) and that it has finished loading',
      );
    return fail(`Redis at ${where} does not answer`, 'start it, or fix redisUrl / $REDIS_URL (or name none: sunset then runs its own)');
  }
  const p = privatePaths(c.stateDir);
  if ((await pingSocket(p.socket, timeoutMs)) === 'pong') return ok(`sunset's private Redis answers on ${p.socket}`);
  if (c.privateRedis === 'auto' && (await pingOnce(redisAddress(c.redisUrl), timeoutMs)) === 'pong')
    return ok(`a Redis answers at ${where}: sunset uses it (no Redis named)`);
  const bin = findRedisServer(env);
  // its config is written at each start: it has run before, and its schedule waits in its AOF
  if (bin && existsSync(p.conf))
    return ok(
      `sunset's private Redis is not running (no \`sunset up\`): \`sunset up\` starts it again (${bin}), its schedule kept in its AOF in ${p.dir}`,
    );
  if (bin) return ok(`no Redis runs yet: \`sunset up\` starts its private one (${bin}, its socket and AOF in ${p.dir})`);
  return fail(
    'no Redis answers, none is named, and redis-server is not on PATH for sunset to run its own',
    installLine('for `sunset up` to run its own Redis'),
  );
}

// ------------------------------------------------------------------ tmux

export async function checkTmux({ config: c, timeoutMs }: DoctorContext): Promise<Finding> {
  const client = await run(['tmux', '-V'], { timeoutMs });
  const where = c.fleet.tmuxSocket ? `socket ${c.fleet.tmuxSocket}` : 'the default socket';
  if (!client.ok) {
    const says = `tmux cannot be run (${why(client.error)})`;
    const fix = 'install tmux (`apt-get install -y tmux`): an interactive session leaves by /exit typed into its pane';
    return c.fleet.tmuxSocket ? fail(says, fix) : warn(says, fix);
  }
  const mine = client.stdout.trim();
  const server = await run(tmuxArgv(c.fleet.tmuxSocket, 'display-message', '-p', '#{version}'), { timeoutMs });
  if (!server.ok) {
    if (/protocol version mismatch/i.test(server.stderr))
      return fail(
        `the tmux server on ${where} speaks another protocol than ${mine}`,
        'sunset cannot read or type into its panes: run the tmux its panes were started with first on PATH',
      );
    if (/no server running|error connecting to|failed to connect/i.test(server.stderr) && !server.timedOut)
      return ok(`${mine}; no tmux server on ${where} yet`);
    return warn(
      `${mine}, but the server on ${where} did not say its version (${why(server.error)})`,
      'check `tmux display-message -p "#{version}"` as the user sunset runs as',
    );
  }
  const theirs = server.stdout.trim();
  if (`tmux ${theirs}` === mine || theirs === mine) return ok(`${mine}, the same as the server of the panes on ${where}`);
  return warn(
    `${mine}, but the server of the panes on ${where} is ${theirs}`,
    'a client of another version may fail to talk to it: put the server’s tmux first on PATH, or restart the server when its panes allow',
  );
}

// ------------------------------------------------------------------ the claude CLI and its files

export async function checkClaude({ config: c, env, cwd, timeoutMs }: DoctorContext): Promise<Finding> {
  const roster = c.fleet.rosterCommand[0];
  if (roster !== c.fleet.claudeCommand && !whichFile(roster, env, cwd))
    return fail(`fleet.rosterCommand's ${JSON.stringify(roster)} is not an executable file`, 'point fleet.rosterCommand at the claude CLI');
  const r = await run([c.fleet.claudeCommand, '--version'], { timeoutMs });
  // a box of other agent CLIs only (fleet.agents): no Claude Code is no failure, their sessions are still read
  const others = agentsRead(c, env).map((a) => a.cli.name);
  if (!r.ok && others.length && /\bENOENT\b/.test(r.error ?? ''))
    return warn(
      `Claude Code is not installed (${c.fleet.claudeCommand}: not found): only ${others.join(' and ')} sessions are read`,
      'install Claude Code, or point fleet.claudeCommand (and fleet.rosterCommand) at it, to supervise its sessions too',
    );
  if (!r.ok)
    return fail(
      `\`${c.fleet.claudeCommand} --version\` failed (${why(r.error)})`,
      'install Claude Code, or point fleet.claudeCommand (and fleet.rosterCommand) at it',
    );
  if (/sunset test-fleet stand-in/.test(r.stdout)) return ok(`${c.fleet.claudeCommand} is the test fleet's stand-in`);
  const v = parseVersion(r.stdout);
  const tested = TESTED_VERSIONS.join(', ');
  if (v && TESTED_VERSIONS.includes(v)) return ok(`Claude Code ${v}, a version sunset was tested with`);
  const minor = (x: string) => x.split('.').slice(0, 2).join('.');
  if (v && TESTED_VERSIONS.some((t) => minor(t) === minor(v)))
    return warn(
      `Claude Code ${v} is not one sunset was tested with (tested: ${tested})`,
      `its files are read defensively and what cannot be read protects; ${minor(v)}.x has read the same so far (docs/claude-code.md)`,
    );
  return warn(
    `Claude Code ${v ?? JSON.stringify(r.stdout.trim().slice(0, 60))} is far from the tested ones (${tested})`,
    'expect sessions protected as unknown if its files moved: watch `sunset verdict` (docs/claude-code.md)',
  );
}

/** What a folder's stat says: null when it is a readable folder, else why not (`missing` for ENOENT). */
function folderProblem(dir: string): string | null {
  try {
    if (!statSync(dir).isDirectory()) return 'not a folder';
    accessSync(dir, constants.R_OK | constants.X_OK);
    return null;
  } catch (err) {
    return errorCode(err) === 'ENOENT' ? 'missing' : (errorCode(err) ?? errorMessage(err));
  }
}

export function checkClaudeFiles({ config: c }: DoctorContext): Finding {
  const dir = c.fleet.claudeDir;
  if (dir === null) return ok('fleet.claudeDir is null: Claude Code’s own files (jobs, pins) are not read');
  const bad = folderProblem(dir);
  if (bad === 'missing')
    return warn(`${dir} does not exist`, 'has Claude Code run as this user? sunset must run as the user whose sessions it watches');
  if (bad) return fail(`${dir} cannot be read (${bad})`, 'run sunset as the user who runs Claude Code');
  const problems: string[] = [];
  let jobs = 0;
  const jobsDir = join(dir, 'jobs');
  if (folderProblem(jobsDir) === null)
    for (const e of readdirSync(jobsDir, { withFileTypes: true })) {
      if (!e.isDirectory() || e.name === 'tasks' || e.name === 'inbox') continue;
      jobs++;
      try {
        readFileSync(join(jobsDir, e.name, 'state.json'));
      } catch (err) {
        if (errorCode(err) !== 'ENOENT') problems.push(`${e.name}/state.json: ${errorCode(err) ?? errorMessage(err)}`);
      }
    }
  const pins = readPins(dir);
  if (!pins.ok) problems.push(pins.error);
  const projects = folderProblem(c.fleet.projectsDir);
  if (projects && projects !== 'missing') problems.push(`${c.fleet.projectsDir}: ${projects}`);
  if (problems.length)
    return fail(
      `${dir}: ${problems.length} unreadable: ${problems.slice(0, 3).join('; ')}${problems.length > 3 ? '; …' : ''}`,
      'what cannot be read protects every session it concerns: run sunset as the user who runs Claude Code',
    );
  return ok(`${dir} reads: ${jobs} job folder${jobs === 1 ? '' : 's'}, pins ${pins.ok ? 'readable' : '?'}`);
}

export function checkTasks({ config: c }: DoctorContext): Finding {
  const dir = c.fleet.tasksDir;
  const bad = folderProblem(dir);
  // no Driver, no task files: finished Claude Code jobs still leave by their own chain (a warning, as verdict says it)
  if (bad === 'missing')
    return warn(
      `the tasks folder ${dir} does not exist: no session has a task (finished background jobs still leave by their own chain)`,
      `if a Driver writes task files, create it (mkdir -p ${dir}) or point fleet.tasksDir at the folder it writes them to`,
    );
  if (bad)
    return fail(
      `the tasks folder ${dir} cannot be read (${bad})`,
      'run sunset as the user who writes the task files, or fix fleet.tasksDir',
    );
  const n = readdirSync(dir).filter((f) => f.endsWith('.json')).length;
  return ok(`the tasks folder ${dir} reads (${n} task file${n === 1 ? '' : 's'})`);
}
