import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfig } from '../src/config.js';
import { gatherFleet } from '../src/evidence/fleet.js';
import { RealFleet } from '../sim/real/real-fleet.js';
import { claudeWrapper } from '../sim/real/claude-wrapper.js';
const fleet = await RealFleet.create();
try {
  const claude = claudeWrapper(fleet);
  for (let i = 0; i < 6; i++) i % 2 ? await fleet.startInteractive(`[[reply:Done.]] t${i}`) : await fleet.startBackground(`[[state:done]] t${i}`);
  const config = parseConfig({ stateDir: join(fleet.root, 'st'), fleet: { rosterCommand: [claude, 'agents', '--json', '--all'], claudeCommand: claude, claudeDir: fleet.claudeDir, projectsDir: join(fleet.claudeDir, 'projects'), tasksDir: join(fleet.root, 'tasks'), inboxDir: join(fleet.root, 'inbox'), tmuxSocket: fleet.tmuxSocket } }, { env: {} });
  for (let i = 0; i < 10; i++) await gatherFleet(config, { roster: 'files' });
  const s = new Session(); s.connect(); await s.post('Profiler.enable'); await s.post('Profiler.setSamplingInterval', { interval: 100 }); await s.post('Profiler.start');
  const c0 = process.cpuUsage();
  for (let i = 0; i < 40; i++) await gatherFleet(config, { roster: 'files' });
  const u = process.cpuUsage(c0);
  const { profile } = await s.post('Profiler.stop');
  console.log('per sweep CPU ms', (u.user + u.system) / 1000 / 40);
  writeFileSync('/tmp/sweep.cpuprofile', JSON.stringify(profile));
} finally { await fleet.destroy(); }
