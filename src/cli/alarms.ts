import { existsSync } from 'node:fs';
import { Alarms, type ListedAlarm } from '../store/alarms.js';
import { EXIT, UsageError, config, personName, type Command, type Io } from './common.js';
import type { Config } from '../config.js';
import { testChannels } from '../alarms/deliver.js';

const USAGE = `usage: sunset alarms [--all] [--json [--array]] [--config FILE]
       sunset alarms ack ID [--reason TEXT] [--json] [--config FILE]
       sunset alarms test [--json] [--config FILE]

Lists the open alarms on this host (session-will-not-exit, cap-reached, claude-code-unreadable), oldest first, each with
its ID, from stateDir (a Redis flush loses none). --all lists every alarm ever raised, each with
its acknowledgement. --json prints { "alarms": [ … ] }; --array the bare list (older scripts).

\`ack ID\` (the ID as listed, or a unique prefix of it) closes an alarm: a person has seen it and
decided. The alarm stays in the log; the acknowledgement is kept beside it and audited, with who
and --reason. docs/operations.md says what to do with each kind.

\`test\` sends a test message to every alarm channel (alarms.webhook, alarms.command and each of
alarms.channels, whatever kinds it takes) and prints what each answered. It exits 1 when any
failed, or when no channel is configured. --json prints { "ok": …, "channels": [ … ] }.

Exit codes: 0 done, 1 failure or already acknowledged (it says by whom), 2 bad usage or an unknown ID.`;

function line(a: ListedAlarm): string {
  const ack = a.ack ? `\n${' '.repeat(10)}acknowledged ${a.ack.at} by ${a.ack.by}: ${a.ack.why}` : '';
  return `${a.id}  ${a.at}  ${a.kind.padEnd(22)} ${a.message}${ack}`;
}

async function testCommand(cfg: Config, json: boolean, io: Io): Promise<number> {
  const answers = await testChannels(cfg);
  const ok = answers.length > 0 && answers.every((a) => a.ok);
  if (json) io.out(JSON.stringify({ ok, channels: answers }, null, 2));
  else if (!answers.length)
    io.err('sunset alarms: no alarm channel is configured (alarms.webhook, alarms.command, alarms.channels): nothing reaches a person');
  else {
    const w = Math.max(...answers.map((a) => a.name.length));
    for (const a of answers) io.out(`${a.ok ? 'ok    ' : 'FAILED'}  ${a.name.padEnd(w)}  ${a.type.padEnd(7)}  ${a.detail}`);
    const bad = answers.filter((a) => !a.ok).length;
    io.out(bad ? `${bad} of ${answers.length} channels failed` : `all ${answers.length} channels answered`);
  }
  return ok ? EXIT.ok : EXIT.failure;
}

export const alarmsCommand: Command = {
  name: 'alarms',
  summary:
    'alarms raised for a person (session-will-not-exit, cap-reached, claude-code-unreadable); ack ID closes one; test sends to each channel',
  usage: USAGE,
  options: { json: { type: 'boolean' }, array: { type: 'boolean' }, all: { type: 'boolean' }, reason: { type: 'string' } },
  allowPositionals: true,
  async run({ values, positionals }, io) {
    const [sub, ...ids] = positionals;
    if (sub !== undefined && sub !== 'ack' && sub !== 'test')
      throw new UsageError(`unknown subcommand ${JSON.stringify(sub)} (there are: ack ID, test)\n\n${USAGE}`);
    const cfg = config(values, io);
    if (sub === 'test') {
      if (ids.length) throw new UsageError(`test takes no arguments\n\n${USAGE}`);
      if (values.all || values.array || values.reason !== undefined) throw new UsageError(`test takes only --json\n\n${USAGE}`);
      return testCommand(cfg, Boolean(values.json), io);
    }
    const alarms = new Alarms(cfg);
    if (sub === 'ack') {
      if (ids.length !== 1) throw new UsageError(`ack takes exactly one alarm ID (as \`sunset alarms\` lists it)\n\n${USAGE}`);
      if (values.all || values.array) throw new UsageError(`ack takes no --all or --array\n\n${USAGE}`);
      const r = alarms.ack(ids[0], { by: personName(), why: values.reason ?? '' });
      const json = (o: object) => values.json && io.out(JSON.stringify(o, null, 2));
      switch (r.status) {
        case 'acknowledged':
          json({ status: r.status, alarm: r.alarm });
          if (!values.json)
            io.out(`alarm ${r.alarm.id} (${r.alarm.kind}) acknowledged: it leaves the list and stays in the log (sunset alarms --all)`);
          return EXIT.ok;
        case 'already':
          json({ status: r.status, alarm: r.alarm });
          io.err(`sunset alarms: alarm ${r.alarm.id} was already acknowledged, ${r.ack.at} by ${r.ack.by}: ${r.ack.why}`);
          return EXIT.failure;
        case 'ambiguous':
          json({ status: r.status, matches: r.matches.map((m) => m.id) });
          io.err(
            `sunset alarms: ${JSON.stringify(ids[0])} names ${r.matches.length} alarms (${r.matches.map((m) => m.id).join(', ')}): give more of the ID`,
          );
          return EXIT.usage;
        case 'unknown-id':
          json({ status: r.status });
          io.err(
            `sunset alarms: no alarm has the ID ${JSON.stringify(ids[0])}${ids[0]!.length < 4 ? ' (a prefix needs at least 4 characters)' : ''} (sunset alarms --all lists every one)`,
          );
          return EXIT.usage;
      }
    }
    if (values.reason !== undefined) throw new UsageError(`--reason goes with ack ID\n\n${USAGE}`);
    if (values.array && !values.json) throw new UsageError(`--array goes with --json\n\n${USAGE}`);
    const all = alarms.listed();
    const list = values.all ? all : all.filter((a) => !a.ack);
    if (values.json) {
      io.out(JSON.stringify(values.array ? list : { alarms: list }, null, 2));
      return EXIT.ok;
    }
    const closed = all.length - all.filter((a) => !a.ack).length;
    if (!existsSync(cfg.stateDir))
      io.err(`sunset alarms: stateDir ${cfg.stateDir} does not exist (nothing has run with this config yet, or the path is wrong)`);
    if (!list.length) io.out(values.all || !closed ? 'no alarms' : `no open alarms (${closed} acknowledged: sunset alarms --all)`);
    else {
      for (const a of list) io.out(line(a));
      if (!values.all && closed) io.out(`(${closed} acknowledged, not shown: sunset alarms --all)`);
      else if (!values.all) io.out(`(sunset alarms ack ID --reason TEXT closes one)`);
    }
    return EXIT.ok;
  },
};
