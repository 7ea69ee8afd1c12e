// sunset finds panes whatever the locale it runs under: a bare systemd unit, cron or a container has no UTF-8
// locale, and tmux then wrote the tabs of list-panes' format as `_` (every interactive session read no-pane).
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { listPanes } from '../src/evidence/tmux.js';

const socket = `sunset-locale-${randomBytes(4).toString('hex')}`;

afterAll(() => {
  spawnSync('tmux', ['-L', socket, 'kill-server'], { stdio: 'ignore' }); // our own server
});

describe('listPanes', () => {
  it('reads the panes under the C locale as under a UTF-8 one', async () => {
    expect(spawnSync('tmux', ['-L', socket, 'new-session', '-d', '-s', 'locale-test', 'sleep', '300']).status).toBe(0);
    const saved = { LANG: process.env.LANG, LC_ALL: process.env.LC_ALL, LC_CTYPE: process.env.LC_CTYPE };
    try {
      for (const [k, v] of Object.entries({ LANG: 'C', LC_ALL: 'C', LC_CTYPE: 'C' })) process.env[k] = v;
      const r = await listPanes(socket, 10_000);
      expect(r.ok).toBe(true);
      if (!r.ok) return;
      expect(r.panes).toHaveLength(1);
      expect(r.panes[0]).toMatchObject({ sessionName: 'locale-test', dead: false });
      expect(r.panes[0].paneId).toMatch(/^%\d+$/);
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
});
