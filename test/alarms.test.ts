// Alarms: once per key ever, kept in stateDir, delivered to a webhook and a command at least once.
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Alarms } from '../src/store/alarms.js';

const base = (stateDir: string, alarms: { webhook: string | null; command: string[] | null }) => ({ stateDir, host: 'h', alarms, probeTimeout: 5000 });

describe('alarms', () => {
  it('raises once per kind and key, ever, and lists them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sunset-alarms-'));
    const a = new Alarms(base(dir, { webhook: null, command: null }));
    expect(await a.raise('session-will-not-exit', 'task/t1', { taskId: 't1', message: 'm1' })).not.toBeNull();
    expect(await a.raise('session-will-not-exit', 'task/t1', { taskId: 't1', message: 'again' })).toBeNull();
    expect(await new Alarms(base(dir, { webhook: null, command: null })).raise('session-will-not-exit', 'task/t1', { message: 'a new process' })).toBeNull();
    await a.raise('cap-reached', 'hour/2026-11-30T04', { message: 'cap reached: 36/35' });
    expect(a.list().map((x) => [x.kind, x.key])).toEqual([
      ['session-will-not-exit', 'task/t1'],
      ['cap-reached', 'hour/2026-11-30T04'],
    ]);
  });

  it('delivers to a webhook and a command; a failed delivery is retried by redeliver()', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sunset-alarms-'));
    const got: any[] = [];
    let fail = true;
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        if (fail) {
          res.statusCode = 500;
          return res.end();
        }
        got.push(JSON.parse(body));
        res.end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(server.address() as any).port}/hook`;
    const out = join(dir, 'cmd-out.jsonl');
    const command = [process.execPath, '-e', `let s='';process.stdin.on('data',d=>s+=d).on('end',()=>require('fs').appendFileSync(${JSON.stringify(out)}, s + '\\n'))`];
    try {
      const a = new Alarms(base(dir, { webhook: url, command }));
      await a.raise('session-will-not-exit', 'task/t2', { taskId: 't2', message: 'will not exit' });
      expect(got).toEqual([]); // the webhook answered 500
      expect(JSON.parse(readFileSync(out, 'utf8'))).toMatchObject({ kind: 'session-will-not-exit', taskId: 't2' });
      fail = false;
      expect(await a.redeliver()).toBe(1);
      expect(got).toMatchObject([{ kind: 'session-will-not-exit', key: 'task/t2', message: 'will not exit' }]);
      expect(await a.redeliver()).toBe(0); // delivered: not again
      expect(existsSync(join(dir, 'alarms.jsonl'))).toBe(true);
    } finally {
      server.close();
    }
  });
});
