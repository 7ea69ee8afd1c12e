// The exit-path table (src/agents/): which session takes which path, what each path knows of itself, that only
// sessionExit() takes a path, and the ask typed into a real pane of the test fleet (askVia `pane`).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT_PATHS, exitPathOf } from '../src/agents/index.js';
import { parseConfig } from '../src/config.js';
import { gatherFleet } from '../src/evidence/fleet.js';
import { deliverAsk } from '../src/pipeline/ask.js';
import { testConfig } from './support/sunset.js';
import { until, useFleet } from './support/use-fleet.js';

const H = 3_600_000;

describe('exitPathOf: the table', () => {
  it('gives a background Claude Code session claude stop, and an interactive one /exit typed into its pane', () => {
    expect(exitPathOf({ kind: 'background' })?.name).toBe('claude-background');
    expect(exitPathOf({ kind: 'interactive' })?.name).toBe('claude-interactive');
    // a view with no agent is Claude Code's: the same as naming it
    expect(exitPathOf({ kind: 'background', agent: 'claude-code' })).toBe(EXIT_PATHS['claude-background']);
    expect(exitPathOf({ kind: 'interactive', agent: null })).toBe(EXIT_PATHS['claude-interactive']);
  });

  it('gives none to a session whose kind the roster did not say, or whose agent CLI no path serves', () => {
    expect(exitPathOf({ kind: 'unknown' })).toBeNull();
    expect(exitPathOf({ kind: null })).toBeNull();
    expect(exitPathOf({ kind: 'interactive', agent: 'no-such-cli' })).toBeNull();
    expect(exitPathOf({ kind: 'background', agent: 'no-such-cli' })).toBeNull();
  });

  it('names each path by its key, and serves each agent and kind by one path only', () => {
    const paths = Object.entries(EXIT_PATHS);
    for (const [key, p] of paths) expect(p.name).toBe(key);
    const served = paths.map(([, p]) => `${p.agent}/${p.kind}`);
    expect(new Set(served).size).toBe(served.length);
  });

  it('says what each path does and needs, for the words, the ledger and the verdict', () => {
    const bg = EXIT_PATHS['claude-background'];
    const it_ = EXIT_PATHS['claude-interactive'];
    expect({ how: bg.how, method: bg.method, needsPane: bg.needsPane, passesId: bg.passesId }).toEqual({
      how: 'claude stop',
      method: 'claude-stop',
      needsPane: false,
      passesId: true,
    });
    expect({ how: it_.how, method: it_.method, needsPane: it_.needsPane, passesId: it_.passesId }).toEqual({
      how: '/exit typed into its pane',
      method: 'typed-exit',
      needsPane: true,
      passesId: false,
    });
    // a path typed into a pane reads drafts; one that is not has none to read
    for (const p of Object.values(EXIT_PATHS)) {
      expect(typeof p.draft === 'function', p.name).toBe(p.needsPane);
      expect(typeof p.draftOnScreen === 'function', p.name).toBe(p.needsPane);
    }
    expect(it_.draftOnScreen!('no input box here')).toBeNull(); // a screen it cannot read is unknown
  });

  it('resumes both with claude --resume; the interactive one in a tmux window of its own', () => {
    const cfg = parseConfig({}, { env: {} });
    const e = { sessionId: 's1', id: null, cwd: '/w', resume: EXIT_PATHS['claude-background'].resumeCommand(cfg, 's1') };
    expect(e.resume).toEqual(['claude', '--resume', 's1']);
    expect(EXIT_PATHS['claude-interactive'].resumeCommand(cfg, 's1')).toEqual(e.resume);
    expect(EXIT_PATHS['claude-background'].resumeArgv(cfg, e, true)).toEqual({ argv: e.resume, attach: null });
    expect(EXIT_PATHS['claude-interactive'].resumeArgv(cfg, e, true).argv).toEqual(['tmux', 'new-window', '-c', '/w', '--', ...e.resume]);
  });
});

describe('only sessionExit() takes an exit path (D2, through the table)', () => {
  const ROOT = join(__dirname, '..');
  const sources = (dir: string): string[] =>
    readdirSync(dir).flatMap((n) => {
      const p = join(dir, n);
      return statSync(p).isDirectory() ? sources(p) : n.endsWith('.ts') ? [p] : [];
    });
  const code = (f: string) =>
    readFileSync(f, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/(^|[^:])\/\/.*$/gm, '$1');
  const product = ['src', 'queues', 'workers'].flatMap((d) => sources(join(ROOT, d)));

  it("no module but src/pipeline/session-exit.ts calls a path's leave()", () => {
    // the modules that can reach a path: those that import one, or the table (the paths' own files define leave)
    const reach = product.filter((f) => /from\s*['"][^'"]*agents\/(?!types)[\w-]+\.js['"]/.test(code(f)));
    const callers = reach.filter((f) => /\.leave\s*\(/.test(code(f))).map((f) => relative(ROOT, f));
    expect(callers).toEqual(['src/pipeline/session-exit.ts']);
  });

  it('the workers, queues and pipeline ask the table, not whether a session is interactive', () => {
    const dirs = ['workers', 'queues', 'src/pipeline', 'src/report'].map((d) => join(ROOT, d));
    const asking = product
      .filter((f) => dirs.some((d) => f.startsWith(`${d}/`)))
      .filter((f) => /\.kind\s*[!=]==?\s*'interactive'/.test(code(f)))
      .map((f) => relative(ROOT, f));
    expect(asking).toEqual([]);
  });
});

describe('the ask typed into a pane (askVia pane) on the test fleet', () => {
  const ctx = useFleet();

  it("is typed into an empty box, never over a person's draft, and a background session has no pane to type into", async () => {
    const i = await ctx.fleet.spawnInteractive({ transcriptAgeMs: H });
    const b = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    const cfg = testConfig(ctx.fleet, { fleet: { askVia: 'pane' } });
    const view = async (sessionId: string) => (await gatherFleet(cfg)).sessions.find((s) => s.sessionId === sessionId)!;
    const screen = () => ctx.fleet.tmux(['capture-pane', '-p', '-t', i.paneId!]);
    await until('its prompt is drawn', () => screen().includes('Type /exit to leave.'));
    const finished = { id: 't-pane', state: 'done' };

    const typed = await deliverAsk(cfg, await view(i.sessionId), finished, Date.now());
    expect(typed).toEqual({ ok: true, via: 'pane' });
    await until('the ask reached the session', () => ctx.fleet.typed(i).length === 1);
    expect(ctx.fleet.typed(i)[0]!.line).toMatch(/^sunset: your task t-pane is done\. Please wrap up/);

    ctx.fleet.tmux(['send-keys', '-t', i.paneId!, '-l', 'half a thought']); // a person types, no Enter
    await until('the draft is on screen', () => screen().includes('\u276f\u00a0half a thought'));
    const held = await deliverAsk(cfg, await view(i.sessionId), finished, Date.now());
    expect(held).toEqual({ ok: false, via: 'pane', why: 'a person left a draft in its input box' });
    expect(ctx.fleet.typed(i)).toHaveLength(1); // nothing typed over the draft
    expect(screen()).toContain('\u276f\u00a0half a thought');

    const none = await deliverAsk(cfg, await view(b.sessionId), finished, Date.now());
    expect(none).toEqual({ ok: false, via: 'pane', why: 'no pane holds this session' });
  });
});
