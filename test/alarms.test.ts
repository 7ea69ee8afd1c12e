// Alarms: once per key ever, kept in stateDir, delivered to a webhook and a command at least once.
import { createServer } from 'node:http';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Alarms, alarmId } from '../src/store/alarms.js';
import { readAudit } from '../src/store/audit.js';
import { tempDir } from './support/temp-dir.js';
import { parseConfig } from '../src/config.js';

const base = (stateDir: string, alarms: { webhook: string | null; command: string[] | null }) => ({
  stateDir,
  host: 'h',
  alarms: parseConfig({ alarms }, { env: {} }).alarms,
  probeTimeout: 5000,
});

describe('alarms', () => {
  it('raises once per kind and key, ever, and lists them', async () => {
    const dir = tempDir('sunset-alarms-');
    const a = new Alarms(base(dir, { webhook: null, command: null }));
    expect(await a.raise('session-will-not-exit', 'task/t1', { taskId: 't1', message: 'm1' })).not.toBeNull();
    expect(await a.raise('session-will-not-exit', 'task/t1', { taskId: 't1', message: 'again' })).toBeNull();
    expect(
      await new Alarms(base(dir, { webhook: null, command: null })).raise('session-will-not-exit', 'task/t1', { message: 'a new process' }),
    ).toBeNull();
    await a.raise('cap-reached', 'hour/2026-11-30T04', { message: 'cap reached: 36/35' });
    expect(a.list().map((x) => [x.kind, x.key])).toEqual([
      ['session-will-not-exit', 'task/t1'],
      ['cap-reached', 'hour/2026-11-30T04'],
    ]);
  });

  it('delivers to a webhook and a command; a failed delivery is retried by redeliver()', async () => {
    const dir = tempDir('sunset-alarms-');
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
    const command = [
      process.execPath,
      '-e',
      `let s='';process.stdin.on('data',d=>s+=d).on('end',()=>require('fs').appendFileSync(${JSON.stringify(out)}, s + '\\n'))`,
    ];
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

  it('a person acknowledges an alarm by its id: once (a second is refused, naming the first), audited, kept in the log, out of the open list', async () => {
    const dir = tempDir('sunset-alarms-');
    const a = new Alarms(base(dir, { webhook: null, command: null }));
    await a.raise('session-will-not-exit', 'task/t1', { taskId: 't1', sessionId: 's1', message: 'will not exit' });
    await a.raise('cap-reached', 'hour/2026-11-30T04', { message: 'cap reached: 36/35' });
    const log = readFileSync(join(dir, 'alarms.jsonl'), 'utf8');
    const [first, second] = a.listed();
    expect(first.id).toBe(alarmId('session-will-not-exit', 'task/t1'));
    expect(first.id).toMatch(/^[0-9a-f]{8}$/);
    expect(first.ack).toBeNull();
    expect(a.open().map((x) => x.id)).toEqual([first.id, second.id]);

    expect(a.ack('ffffffff', { by: 'gera', why: 'x' })).toEqual({ status: 'unknown-id' });
    expect(a.ack('ab', { by: 'gera', why: 'x' })).toEqual({ status: 'unknown-id' }); // a prefix needs 4 characters
    const r = a.ack(first.id.slice(0, 6), { by: 'gera', why: 'stopped it by hand after reading its transcript' });
    expect(r).toMatchObject({
      status: 'acknowledged',
      alarm: { id: first.id, kind: 'session-will-not-exit', ack: { by: 'gera', why: 'stopped it by hand after reading its transcript' } },
    });
    const again = new Alarms(base(dir, { webhook: null, command: null })).ack(first.id, { by: 'someone else', why: 'again' });
    expect(again).toMatchObject({ status: 'already', ack: { by: 'gera' } });

    // the alarm itself is untouched: the log is append-only, and lists it still
    expect(readFileSync(join(dir, 'alarms.jsonl'), 'utf8')).toBe(log);
    expect(a.list()).toHaveLength(2);
    expect(a.open().map((x) => x.id)).toEqual([second.id]);
    expect(a.listed().find((x) => x.id === first.id)!.ack).toMatchObject({ by: 'gera', at: expect.any(String) });
    // a new Alarms (a restart) reads the same state; and the ack is audited once, with who and why
    expect(new Alarms(base(dir, { webhook: null, command: null })).open()).toHaveLength(1);
    expect(readAudit(dir).filter((e) => e.event === 'alarm:acknowledged')).toEqual([
      expect.objectContaining({
        alarmId: first.id,
        kind: 'session-will-not-exit',
        key: 'task/t1',
        taskId: 't1',
        sessionId: 's1',
        by: 'gera',
        why: 'stopped it by hand after reading its transcript',
      }),
    ]);
    // an ack without a reason says so; redeliver() does not mistake acks for alarms to deliver
    expect(a.ack(second.id, { by: 'gera', why: '  ' })).toMatchObject({ status: 'acknowledged', ack: { why: '(no reason given)' } });
    expect(await a.redeliver()).toBe(0);
  });
});
