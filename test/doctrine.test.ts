// Doctrine D1 and D2 over the source itself: no code path in the product can send a signal, and only the
// rate-limited exit worker can call sessionExit(). (Runtime checks: every integration test also asserts
// that the test fleet's agents received no signal.)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(__dirname, '..');
function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sources(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}
const product = ['src', 'queues', 'workers'].flatMap((d) => sources(join(ROOT, d)));
const code = (file: string) =>
  readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/(^|[^:])\/\/.*$/gm, '$1'); // comments may talk about signals; code may not send them

describe('D1: nothing in src/, queues/ or workers/ sends a signal', () => {
  it('has product files to check', () => {
    expect(product.length).toBeGreaterThan(20);
  });
  const SENDING = [
    { re: /process\.kill\s*\(/, what: 'process.kill(' },
    { re: /\.kill\s*\(/, what: '.kill(' },
    { re: /['"`](kill|pkill|killall|skill)['"`]/, what: 'a kill command as an argv word' },
    { re: /['"`]-(9|15|KILL|TERM|HUP|INT|SIGKILL|SIGTERM)['"`]/, what: 'a signal flag as an argv word' },
    { re: /killSignal|forceKillAfterDelay|cancelSignal/, what: 'an execa kill option' },
    { re: /\bSIG(TERM|KILL|HUP|QUIT|USR1|USR2|STOP|ABRT|ALRM)\b/, what: 'a signal name' },
  ];
  for (const file of product) {
    it(relative(ROOT, file), () => {
      const text = code(file)
        // listening for signals sent to sunset itself is not sending one
        .replace(/process\.(once|on)\(\s*['"]SIG[A-Z]+['"]/g, 'process.$1(LISTEN')
        // stop() on our own Redis connection / kill-session of all-dead tmux sessions (no process left)
        .replace(/['"]kill-session['"]/g, "'KS'");
      for (const { re, what } of SENDING) expect(re.test(text), `${relative(ROOT, file)} holds ${what}`).toBe(false);
    });
  }
});

describe('D2: only the exit worker calls sessionExit()', () => {
  it('no other module imports sessionExit', () => {
    const importers = product.filter(
      (f) =>
        /import\s*\{[^}]*\bsessionExit\b[^}]*\}\s*from\s*['"][^'"]*session-exit\.js['"]/.test(code(f)) ||
        /import\s*\(\s*['"][^'"]*src\/session-exit/.test(code(f)),
    );
    expect(importers.map((f) => relative(ROOT, f))).toEqual(['workers/session-exit.ts']);
  });
  it('nothing re-exports it or reaches it by a namespace import', () => {
    for (const f of product) {
      const t = code(f);
      expect(
        /export\s*\{[^}]*sessionExit|export\s*\*\s*from\s*['"][^'"]*session-exit/.test(t) && !f.endsWith('src/session-exit.ts'),
        f,
      ).toBe(false);
      expect(/import\s*\*\s*as\s*\w+\s*from\s*['"][^'"]*session-exit\.js['"]/.test(t), f).toBe(false);
    }
  });
});

describe("a person's override", () => {
  it('never reaches a draft: /exit typed over it would send the draft to the model and the session would stay', async () => {
    const { judge } = await import('../src/doctrine/judge.js');
    for (const r of ['draft-pending', 'draft-unknown']) {
      const view = { verdict: 'protected', reasons: [r], evidence: {} } as any;
      expect(judge({ act: 'person', view, rosterOk: true, override: true, now: 0, recheck: 0 })).toMatchObject({ kind: 'end', why: r });
    }
    const attached = { verdict: 'protected', reasons: ['client-attached'], evidence: {} } as any;
    expect(judge({ act: 'person', view: attached, rosterOk: true, override: true, now: 0, recheck: 0 }).kind).toBe('act');
  });
});
