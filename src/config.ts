// The one place that reads configuration: a JSON file and the environment, validated by one zod schema.
import { readFileSync } from 'node:fs';
import { hostname, homedir } from 'node:os';
import { resolve } from 'node:path';
import { z } from 'zod';
import { alarmsSchema } from './alarms/config.js';
import { argv, duration, path } from './config-fields.js';
import { errorCode, errorMessage } from './errors.js';
import { MAX_EXIT_REQUESTS } from './doctrine/chain.js';

export class ConfigError extends Error {
  readonly exitCode = 2;
}

/** Where sunset looks for a Redis nobody named (`SUNSET_DEFAULT_REDIS_URL` moves it: a test's, or a packager's). */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export { ALARM_KINDS, CHANNEL_KINDS, type ChannelConfig, envSecret } from './alarms/config.js';

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
  // claude-code-unreadable (docs/operations.md): how long Claude Code's files must stay unreadable, across the
  // CLI's sweeps, before the one alarm is raised (a session just started may not have written them yet)
  unreadableFor: duration.default(60_000),
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
   * `claude agents --json --all` at start, at each reconcile, and before an exit takes a session as gone; the CLI wins), `cli`
   * (the CLI on every sweep), `files`.
   */
  rosterFrom: z.enum(['auto', 'cli', 'files']).default('auto'),
  /** A chain job deferred while its session is busy asks the session to say when it is next idle (notify_when_idle over its messaging socket) and is judged again then; false = recheck only. */
  idleNotices: z.boolean().default(true),
  /** A background session with no Driver task whose own job settles `done` gets the exit chain too (docs/claude-code.md). */
  jobChain: z.boolean().default(true),
  /** How a conversation comes back (`sunset resume`): argv, `{sessionId}` filled; null = [claudeCommand, "--resume", "{sessionId}"]. */
  resumeCommand: argv.nullable().default(null),
  /**
   * The agent CLIs read beside Claude Code (src/agents/clis.ts: codex, gemini): each one's command and home folder,
   * or false = not read. One not named is read at its defaults when its command is on PATH.
   */
  agents: z
    .record(z.string(), z.union([z.literal(false), z.strictObject({ command: z.string().min(1).optional(), home: path.optional() })]))
    .default({}),
});

export const configSchema = z.strictObject({
  host: z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/, 'takes a host name of letters, digits, ".", "_" and "-"')
    .default(() => safeHost()),
  redisUrl: z
    .string()
    .min(1)
    .superRefine((u, ctx) => {
      const bad = redisUrlProblem(u);
      if (bad)
        ctx.addIssue({
          code: 'custom',
          message: `takes a URL such as "redis://127.0.0.1:6379", "redis://:password@host:6379/2", "rediss://…" or "unix:///path/to/redis.sock"; this one ${bad}`,
        });
    })
    .default(DEFAULT_REDIS_URL),
  /** A Redis Cluster's seed nodes (`host:port` or `redis://[user:pass@]host:port`); when set, redisUrl is not used. null = one server. */
  redisCluster: z
    .array(
      z
        .string()
        .regex(
          /^(rediss?:\/\/([^@/]*@)?)?(\[[0-9A-Fa-f:.]+\]|[^\s/:@[\]]+):\d{1,5}\/?$/,
          'takes node addresses such as "127.0.0.1:7000" or "redis://10.0.0.5:7000": a host and a port, no database',
        )
        .superRefine((a, ctx) => {
          const port = /:(\d{1,5})\/?$/.exec(a)?.[1];
          if (port !== undefined && !validPort(Number(port)))
            ctx.addIssue({ code: 'custom', message: `takes node addresses whose port is 1–65535 (found ${JSON.stringify(a)})` });
        }),
    )
    .min(1, 'takes at least one node address, or null for one server (redisUrl)')
    .nullable()
    .default(null),
  /**
   * sunset's own redis-server (a unix socket and its AOF in stateDir/redis, started and supervised by `sunset up`)
   * while no Redis is named: `auto`, when nothing answers at the default address; `always`; `never` (wait for
   * the default address, as for a named Redis). A Redis named by redisUrl, redisCluster or $REDIS_URL makes it `never`.
   */
  privateRedis: z.enum(['auto', 'always', 'never']).default('auto'),
  stateDir: path.default('~/.local/state/sunset'),
  fleet: fleetSchema.default(() => fleetSchema.parse({})),
  windows: windowsSchema.default(() => windowsSchema.parse({})),
  probeTimeout: duration.default(15_000),
  maxExitRequests: z.number().int().min(1).max(MAX_EXIT_REQUESTS).default(MAX_EXIT_REQUESTS),
  cap: z.number().int().min(1).default(35),
  /** MemAvailable below this many MB is memory pressure: eligible exits go largest RSS first. null = never. */
  memoryFloorMB: z.number().int().min(0).nullable().default(2048),
  // admission by memory (issue 30 item 4; src/cap/memory.ts): where MemAvailable is read, and the size of a typical
  // session while the fleet has no live session to measure (else the median RSS of its live sessions)
  meminfoPath: path.default('/proc/meminfo'),
  admit: z.strictObject({ sessionMB: z.number().int().min(0).default(500) }).default(() => ({ sessionMB: 500 })),
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
  /**
   * Resume, kept (docs/resume-and-memory.md): at each exit a gzip copy of the session's transcript goes to
   * stateDir/kept, and `sunset resume` restores it once Claude Code's cleanupPeriodDays has deleted the transcript.
   * maxMB: the most the copies take together (a copy past it is not made; none is dropped for it);
   * keepDays: how long a copy stays (null = until `sunset exited --forget`).
   */
  resume: z
    .strictObject({
      keep: z.boolean().default(true),
      maxMB: z.number().int().min(0).default(1024),
      keepDays: z.number().int().min(1).nullable().default(null),
    })
    .default(() => ({ keep: true, maxMB: 1024, keepDays: null })),
  /** Claude Code hook events as evidence (src/hooks.ts): where `hook-event` keeps them (null = <stateDir>/hooks), how long one counts. */
  hooks: z
    .strictObject({ dir: path.nullable().default(null), freshFor: duration.default(15 * 60_000) })
    .default(() => ({ dir: null, freshFor: 15 * 60_000 })),
  alarms: alarmsSchema.default(() => alarmsSchema.parse({})),
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
        const known = knownKeys(i.path);
        return `unknown key ${i.keys.map((k) => `"${at}${k}"`).join(', ')}${where}${known.length ? `; known keys here are: ${known.join(', ')}` : ''}`;
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
    if (bad)
      throw new ConfigError(
        `environment variable REDIS_URL (it replaces config key "redisUrl") ${bad}: takes a URL such as "redis://127.0.0.1:6379"`,
      );
    c.redisUrl = env.REDIS_URL;
  }
  namedRedis(input, c, env, where);
  c.stateDir = expandHome(c.stateDir, cwd);
  c.fleet.tasksDir = expandHome(c.fleet.tasksDir, cwd);
  c.fleet.inboxDir = expandHome(c.fleet.inboxDir, cwd);
  c.fleet.projectsDir = expandHome(c.fleet.projectsDir, cwd);
  if (c.fleet.claudeDir !== null) c.fleet.claudeDir = expandHome(c.fleet.claudeDir, cwd);
  if (c.fleet.tmuxSocket?.startsWith('~')) c.fleet.tmuxSocket = expandHome(c.fleet.tmuxSocket, cwd);
  for (const a of Object.values(c.fleet.agents)) if (a !== false && a.home !== undefined) a.home = expandHome(a.home, cwd);
  c.meminfoPath = expandHome(c.meminfoPath, cwd);
  c.hooks.dir = c.hooks.dir === null ? resolve(c.stateDir, 'hooks') : expandHome(c.hooks.dir, cwd);
  return c;
}

/**
 * A Redis named by the user (redisUrl or redisCluster in the file, $REDIS_URL) is used exactly as named: the
 * private one is then off (`privateRedis` becomes `never`). Otherwise redisUrl is the default address, which
 * $SUNSET_DEFAULT_REDIS_URL may move without naming a Redis.
 */
function namedRedis(input: unknown, c: Config, env: NodeJS.ProcessEnv, where: string): void {
  const raw = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
  const inFile =
    raw.redisUrl !== undefined ? 'redisUrl' : raw.redisCluster !== undefined && raw.redisCluster !== null ? 'redisCluster' : null;
  if (inFile && c.privateRedis === 'always')
    throw new ConfigError(`config key "privateRedis"${where} is "always", but "${inFile}" names a Redis: keep one of the two`);
  if (inFile || env.REDIS_URL) {
    c.privateRedis = 'never';
    return;
  }
  const moved = env.SUNSET_DEFAULT_REDIS_URL;
  if (!moved) return;
  const bad = redisUrlProblem(moved);
  if (bad)
    throw new ConfigError(
      `environment variable SUNSET_DEFAULT_REDIS_URL (the address probed when no Redis is named) ${bad}: takes a URL such as "redis://127.0.0.1:6379"`,
    );
  c.redisUrl = moved;
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
  if (u.protocol === 'unix:') return socketUrlProblem(u, url);
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:')
    return `must start with redis://, rediss:// or unix:// (found ${JSON.stringify(url)})`;
  if (!u.hostname) return `names no host (${JSON.stringify(url)})`;
  if (u.port && !validPort(Number(u.port))) return `has port ${u.port}, not 1–65535`;
  const db = u.pathname.replace(/^\//, '');
  if (db && !/^\d{1,5}$/.test(db)) return `has database ${JSON.stringify(db)}, not a number`;
  return null;
}

/** A unix socket's URL: `unix:///absolute/path.sock`, and at most a numeric `?db=N`. */
function socketUrlProblem(u: URL, url: string): string | null {
  if (u.host || u.username || u.password)
    return `names a host or a user; a socket's URL is unix:///absolute/path.sock (found ${JSON.stringify(url)})`;
  if (!u.pathname || u.pathname === '/') return `names no socket path (${JSON.stringify(url)})`;
  const keys = [...u.searchParams.keys()];
  if (keys.some((k) => k !== 'db')) return `takes only ?db=N after the socket path (found ${JSON.stringify(u.search)})`;
  const db = u.searchParams.get('db');
  if (db !== null && !/^\d{1,5}$/.test(db)) return `has database ${JSON.stringify(db)}, not a number`;
  return null;
}

/** A zod schema as knownKeys walks it: an object's shape, or a wrapper (default, nullable) around one. */
type SchemaNode = { shape?: Record<string, SchemaNode>; def?: { innerType?: SchemaNode } } | undefined;

function knownKeys(path: PropertyKey[]): string[] {
  let shape: SchemaNode = configSchema as unknown as SchemaNode;
  for (const p of path) {
    shape = unwrap(shape)?.shape?.[p as string];
  }
  return Object.keys(unwrap(shape)?.shape ?? {});
}

function unwrap(s: SchemaNode): SchemaNode {
  while (s && !s.shape && s.def?.innerType) s = s.def.innerType;
  return s;
}

/**
 * Load config: --config FILE, else SUNSET_CONFIG, else ./sunset.config.json when present, else defaults.
 * A named file that is missing is an error; the implicit ./sunset.config.json is optional.
 */
export function loadConfig(
  opts: { file?: string; cwd?: string; env?: NodeJS.ProcessEnv; overrides?: (raw: Record<string, unknown>) => void } = {},
): Config {
  const env = opts.env ?? process.env;
  const cwd = opts.cwd ?? process.cwd();
  const named = opts.file ?? env.SUNSET_CONFIG;
  const file = named ? resolve(cwd, named) : resolve(cwd, 'sunset.config.json');
  let raw: unknown = {};
  let text: string | null = null;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (named || errorCode(err) !== 'ENOENT')
      throw new ConfigError(
        `config file ${file} cannot be read: ${errorCode(err) === 'ENOENT' ? 'no such file' : errorCode(err) === 'EISDIR' ? 'it is a folder (give the JSON file in it)' : (errorCode(err) ?? errorMessage(err))}`,
      );
  }
  if (text !== null) {
    try {
      raw = JSON.parse(text);
    } catch (err) {
      throw new ConfigError(`config file ${file} is not valid JSON: ${errorMessage(err)}`);
    }
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      throw new ConfigError(`config file ${file} must hold one JSON object`);
  }
  opts.overrides?.(raw as Record<string, unknown>);
  return parseConfig(raw, { cwd, env, source: text !== null ? file : undefined });
}

/** Queue names carry the host so that several hosts can share one Redis. */
export function queueName(base: string, host: string): string {
  return `${base}@${host}`;
}

export const QUEUE_PREFIX = '{sunset}';
