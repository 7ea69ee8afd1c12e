// alarm-delivery: a `deliver` job sends one record (read from stateDir) to one channel — a failure is thrown, and
// BullMQ tries again after alarms.retryDelay, doubled each time; a `tick` enqueues what stateDir says is
// undelivered and sends the digest when it is due.
import { UnrecoverableError, type Job } from 'bullmq/dist/cjs/classes/index.js';
import { alarmDeliverySchema } from '../queues/alarm-delivery.js';
import type { PipelineDeps } from '../src/pipeline/deps.js';
import { deliverTo } from '../src/alarms/deliver.js';
import { readMarker } from '../src/alarms/outbox.js';
import { runDigest } from '../src/alarms/digest.js';
import { enqueuePending, enqueueRecord } from '../src/alarms/enqueue.js';
import { jobData } from './common.js';

export function createAlarmDeliveryProcessor(deps: PipelineDeps) {
  const { config, log } = deps;
  return async (job: Job) => {
    const d = jobData(alarmDeliverySchema, job);
    if (d.op === 'tick') {
      const queued = await enqueuePending(deps.producers.delivery, config);
      const digest = await runDigest({ config, log, now: deps.now, fleet: () => deps.fleet(0, { tmux: 'if-needed' }) });
      if (digest.record) await enqueueRecord(deps.producers.delivery, config, 'digest', digest.record.key);
      return { queued, digest: digest.decision.send ? 'queued' : digest.decision.why };
    }
    const m = readMarker(config.stateDir, d.kind, d.key);
    if (!m) throw new UnrecoverableError(`no ${d.kind} record under key ${JSON.stringify(d.key)} in ${config.stateDir}/alarms`);
    const r = await deliverTo(config, m.alarm, d.channel, log);
    if (r.status === 'failed') throw new Error(`${d.channel}: ${r.answer.detail}`);
    return r.status === 'sent' ? { status: r.status, answer: r.answer.detail } : { status: r.status };
  };
}
