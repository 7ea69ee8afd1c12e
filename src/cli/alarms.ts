import { Alarms } from '../store/alarms.js';
import { EXIT, config, type Command } from './common.js';

export const alarmsCommand: Command = {
  name: 'alarms',
  summary: 'alarms raised for a person (session-will-not-exit, cap-reached)',
  usage: `usage: sunset alarms [--json] [--config FILE]

Lists every alarm ever raised on this host, oldest first, from stateDir (a Redis flush loses none).`,
  options: { json: { type: 'boolean' } },
  async run({ values }, io) {
    const cfg = config(values, io);
    const list = new Alarms(cfg).list();
    if (values.json) io.out(JSON.stringify(list, null, 2));
    else if (!list.length) io.out('no alarms');
    else for (const a of list) io.out(`${a.at}  ${a.kind.padEnd(22)} ${a.message}`);
    return EXIT.ok;
  },
};
