// The one place that reads configuration: a JSON file and the environment, validated by one zod schema.
import { readFileSync } from 'node:fs';
import { hostname, homedir } from 'node:os';
import { resolve } from 'node:path';
import { z } from 'zod';
import { parseDuration } from './duration.js';

export class ConfigError extends Error {
  readonly exitCode = 2;
}

const duration = z.union([z.number(), z.string()]).transform((v, ctx) => {
  const ms = parseDuration(v);
  if (ms === null) {
    ctx.addIssue({ code: 'custom', message: 'takes a duration: a number of ms, or a string like "500ms", "60s", "15m", "48h", "2d"' });
    return z.NEVER;
  }
  return ms;
});
const argv = z.array(z.string().min(1)).min(1);
const path = z.string().min(1);

const windowsSchema = z.strictObject({
  grace: duration.default(15 * 60_000),
  silence: duration.default(15 * 60_000),
  askWait: duration.default(10 * 60_000),
  retryWait: duration.default(10 * 60_000),
  exitConfirm: duration.default(60_000),
  expireEvery: duration.default(30 * 60_000),
  expireIdle: duration.default(48 * 3_600_000),
  reconcileEvery: duration.default(5 * 60_000),
  recheck: duration.default(5 * 60_000),
  reapAfter: duration.default(10 * 60_000),
  admitLease: duration.default(60_000),
  /** A pid-less background row this young is a session starting (`claude --bg` shows no pid for about a second), not a record. */
  starting: duration.default(3_000),
  /** How often the producers take a fleet census into stateDir/samples.jsonl (src/sampler.ts); 0 = never. */
  sampleEvery: duration.default(5 * 60_000),
});

const fleetSchema = z.strictObject({
  rosterCommand: argv.default(['claude', 'agents', '--json', '--all']),
  claudeCommand: z.string().min(1).default('claude'),
  tasksDir: path.default('~/.claude/jobs/tasks'),
  inboxDir: path.default('~/.claude/jobs/inbox'),
  projectsDir: path.default('~/.claude/projects'),
  /** Claude Code's own folder: jobs/<id>/state.json, jobs/pins.json (docs/claude-code.md). null = read none of it. */
  claudeDir: path.nullable().default('~/.claude'),
  tmuxSocket: z.string().min(1).nullable().default(null),
  attachArgv: argv.default(['claude', 'attach']),
  releaseCommand: argv.nullable().default(null),
  /** How the one message is delivered: `auto` (the session's messaging socket where it has one, else the inbox file), `socket`, `inbox`, or `pane` (typed into an interactive session's pane). */
  askVia: z.enum(['auto', 'socket', 'inbox', 'pane']).default('auto'),
  /** While a background session's Driver task is open, sunset pins it so Claude Code's own reaper skips it (docs/claude-code.md). */
  pinProtected: z.boolean().default(true),
  /**
   * Where a sweep reads the roster: `auto` (Claude Code's own files where they can be read, the CLI's
   * `claude agents --json --all` at start, at each reconcile and just before an exit; the CLI wins), `cli`
   * (the CLI on every sweep), `files`.
   */
  rosterFrom: z.enum(['auto', 'cli', 'files']).default('auto'),
  /** A chain job deferred while its session is busy asks the session to say when it is next idle (notify_when_idle over its messaging socket) and is judged again then; false = recheck only. */
  idleNotices: z.boolean().default(true),
  /** A background session with no Driver task whose own job settles `done` gets the exit chain too (docs/claude-code.md). */
  jobChain: z.boolean().default(true),
  /** How a conversation comes back (`sunset resume`): argv, `{sessionId}` filled; null = [claudeCommand, "--resume", "{sessionId}"]. */
  resumeCommand: argv.nullable().default(null),
});

export const configSchema = z.strictObject({
  host: z.string().regex(/^[A-Za-z0-9._-]+$/, 'takes a host name of letters, digits, ".", "_" and "-"').default(() => safeHost()),
  redisUrl: z
    .string()
    .min(1)
    .superRefine((u, ctx) => {
      const bad = redisUrlProblem(u);
      if (bad) ctx.addIssue({ code: 'custom', message: `takes a URL such as "redis://127.0.0.1:6379", "redis://:password@host:6379/2" or "rediss://…"; this one ${bad}` });
    })
    .default('redis://127.0.0.1:6379'),
  /** A Redis Cluster's seed nodes (`host:port` or `redis://[user:pass@]host:port`); when set, redisUrl is not used. null = one server. */
  redisCluster: z
    .array(
      z
        .string()
        .regex(/^(rediss?:\/\/([^@/]*@)?)?(\[[0-9A-Fa-f:.]+\]|[^\s/:@[\]]+):\d{1,5}\/?$/, 'takes node addresses such as "127.0.0.1:7000" or "redis://10.0.0.5:7000": a host and a port, no database')
        .superRefine((a, ctx) => {
          const port = /:(\d{1,5})\/?$/.exec(a)?.[1];
          if (port !== undefined && !validPort(Number(port))) ctx.addIssue({ code: 'custom', message: `takes node addresses whose port is 1–65535 (found ${JSON.stringify(a)})` });
        }),
    )
    .min(1, 'takes at least one node address, or null for one server (redisUrl)')
    .nullable()
    .default(null),
  stateDir: path.default('~/.local/state/sunset'),
  fleet: fleetSchema.default(() => fleetSchema.parse({})),
  windows: windowsSchema.default(() => windowsSchema.parse({})),
  probeTimeout: duration.default(15_000),
  maxExitRequests: z.number().int().min(1).max(3).default(3),
  cap: z.number().int().min(1).default(35),
  /** MemAvailable below this many MB is memory pressure: eligible exits go largest RSS first. null = never. */
  memoryFloorMB: z.number().int().min(0).nullable().default(2048),
  exitRate: z
    .strictObject({ max: z.number().int().min(1).default(1), per: duration.default(10_000) })
    .default(() => ({ max: 1, per: 10_000 })),
  web: z
    .strictObject({
      host: z.string().min(1).default('127.0.0.1'),
      port: z.number().int().min(0).max(65535).default(3000),
      token: z.string().min(16, 'takes a token of at least 16 characters').nullable().default(null),
    })
    .default(() => ({ host: '127.0.0.1', port: 3000, token: null })),
  /** Claude Code hook events as evidence (src/hooks.ts): where `hook-event` keeps them (null = <stateDir>/hooks), how long one counts. */
  hooks: z
    .strictObject({ dir: path.nullable().default(null), freshFor: duration.default(15 * 60_000) })
    .default(() => ({ dir: null, freshFor: 15 * 60_000 })),
  alarms: z
    .strictObject({ webhook: z.string().url().nullable().default(null), command: argv.nullable().default(null) })
    .default(() => ({ webhook: null, command: null })),
  log: z
    .strictObject({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info') })
    .default(() => ({ level: 'info' as const })),
});

export type Config = z.output<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;

function safeHost(): string {
  return hostname().replace(/[^A-Za-z0-9._-]/g, '-') || 'localhost';
}

export function expandHome(p: string, cwd = process.cwd()): string {
  if (p === '~') return homedir();
  if (p.startsWith('~/')) return resolve(homedir(), p.slice(2));
  return resolve(cwd, p);
}

/** Validate a plain object as config; paths are expanded. Throws ConfigError naming the key. */
export function parseConfig(input: unknown, opts: { cwd?: string; env?: NodeJS.ProcessEnv; source?: string } = {}): Config {
  const result = configSchema.safeParse(input ?? {});
  const where = opts.source ? ` in ${opts.source}` : '';
  if (!result.success) {
    const lines = result.error.issues.map((i) => {
      const key = i.path.join('.') || '(top level)';
      if (i.code === 'unrecognized_keys') {
        const at = i.path.length ? `${i.path.join('.')}.` : '';
        return `unknown key ${i.keys.map((k) => `"${at}${k}"`).join(', ')}${where}; known keys here are: ${knownKeys(i.path).join(', ')}`;
      }
      return `config key "${key}"${where} ${i.message.startsWith('takes') ? i.message : `is invalid: ${i.message}`}`;
    });
    throw new ConfigError(lines.join('\n'));
  }
  const c = result.data;
  const cwd = opts.cwd ?? process.cwd();
  const env = opts.env ?? process.env;
  if (env.REDIS_URL) {
    const bad = redisUrlProblem(env.REDIS_URL);
    if (bad) throw new ConfigError(`environment variable REDIS_URL (it replaces config key "redisUrl") ${bad}: takes a URL such as "redis://127.0.0.1:6379"`);
    c.redisUrl = env.REDIS_URL;
  }
  c.stateDir = expandHome(c.stateDir, cwd);
  c.fleet.tasksDir = expandHome(c.fleet.tasksDir, cwd);
  c.fleet.inboxDir = expandHome(c.fleet.inboxDir, cwd);
  c.fleet.projectsDir = expandHome(c.fleet.projectsDir, cwd);
  if (c.fleet.claudeDir !== null) c.fleet.claudeDir = expandHome(c.fleet.claudeDir, cwd);
  if (c.fleet.tmuxSocket?.startsWith('~')) c.fleet.tmuxSocket = expandHome(c.fleet.tmuxSocket, cwd);
  c.hooks.dir = c.hooks.dir === null ? resolve(c.stateDir, 'hooks') : expandHome(c.hooks.dir, cwd);
  return c;
}

const validPort = (n: number) => Number.isInteger(n) && n >= 1 && n <= 65535;

/** What is wrong with a Redis URL (src/redis.ts reads it), or null. */
export function redisUrlProblem(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `is not a URL (${JSON.stringify(url)})`;
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') return `must start with redis:// or rediss:// (found ${JSON.stringify(url)})`;
  if (!u.hostname) return `names no host (${JSON.stringify(url)})`;
  if (u.port && !validPort(Number(u.port))) return `has port ${u.port}, not 1–65535`;
  const db = u.pathname.replace(/^\//, '');
  if (db && !/^\d{1,5}$/.test(db)) return `has database ${JSON.stringify(db)}, not a number`;
  return null;
}

function knownKeys(path: PropertyKey[]): string[] {
  let shape: any = configSchema;
  for (const p of path) {
    shape = unwrap(shape)?.shape?.[p as string];
  }
  return Object.keys(unwrap(shape)?.shape ?? {});
}

function unwrap(s: any): any {
  while (s && !s.shape && s.def?.innerType) s = s.def.innerType;
  return s;
}

/**
 * Load config: --config FILE, else SUNSET_CONFIG, else ./sunset.config.json when present, else defaults.
 * A named file that is missing is an error; the implicit ./sunset.config.json is optional.
 */
export function loadConfig(opts: { file?: string; cwd?: string; env?: NodeJS.ProcessEnv; overrides?: (raw: any) => void } = {}): Config {
  const env = opts.env ?? process.env;
  const cwd = opts.cwd ?? process.cwd();
  const named = opts.file ?? env.SUNSET_CONFIG;
  const file = named ? resolve(cwd, named) : resolve(cwd, 'sunset.config.json');
  let raw: unknown = {};
  let text: string | null = null;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err: any) {
    if (named || err.code !== 'ENOENT') throw new ConfigError(`config file ${file} cannot be read: ${err.code === 'ENOENT' ? 'no such file' : err.code === 'EISDIR' ? 'it is a folder (give the JSON file in it)' : (err.code ?? err.message)}`);
  }
  if (text !== null) {
    try {
      raw = JSON.parse(text);
    } catch (err: any) {
      throw new ConfigError(`config file ${file} is not valid JSON: ${err.message}`);
    }
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ConfigError(`config file ${file} must hold one JSON object`);
  }
  opts.overrides?.(raw);
  return parseConfig(raw, { cwd, env, source: text !== null ? file : undefined });
}

/** Queue names carry the host so that several hosts can share one Redis. */
export function queueName(base: string, host: string): string {
  return `${base}@${host}`;
}

export const QUEUE_PREFIX = '{sunset}';
