// The producers' adds: validated, under deterministic ids, and those of one turn of the event loop sent to
// Redis together (one addBulk). A real Redis (the run's own, test/support/global-setup.ts), a host of its own.
import { afterAll, describe, expect, it } from 'vitest';
import { UnrecoverableError, Worker } from 'bullmq/dist/cjs/classes/index.js';
import { PREFIX, Producer } from '../queues/common.js';
import { exitAskId, exitAskQueue } from '../queues/exit-ask.js';
import { redisOptions } from '../src/redis.js';
import { dropHost, uniqueHost } from './support/sunset.js';
import { untilWithin } from './support/use-fleet.js';

const REDIS_URL = process.env.REDIS_URL!;
const host = uniqueHost();
const ask = new Producer(exitAskQueue, host, redisOptions(REDIS_URL));
afterAll(async () => {
  await ask.close();
  await dropHost(REDIS_URL, host);
});

describe('Producer.add', () => {
  it('sends the adds of one turn together; each caller gets its own job; an id already there is not added twice', async () => {
    const bulks: number[] = [];
    const addBulk = ask.queue.addBulk.bind(ask.queue);
    ask.queue.addBulk = (jobs) => {
      bulks.push(jobs.length); // watched, not replaced: the jobs still go to Redis
      return addBulk(jobs);
    };
    const ids = Array.from({ length: 40 }, (_, i) => `burst-${i}`);
    const jobs = await Promise.all(ids.map((id) => ask.add(exitAskId(id), { taskId: id }, { delay: 3_600_000 })));
    expect(jobs.map((j) => j.id)).toEqual(ids.map((id) => exitAskId(id)));
    expect(bulks).toEqual([40]);
    expect(await ask.queue.getDelayedCount()).toBe(40);
    const first = await ask.queue.getJob(exitAskId('burst-0'));
    expect(first?.data).toEqual({ taskId: 'burst-0' });
    expect(first?.opts.delay).toBe(3_600_000);

    // again, with one new among them: the forty stay as they were, one is added
    const again = await Promise.all([...ids, 'burst-40'].map((id) => ask.add(exitAskId(id), { taskId: id }, { delay: 10 })));
    expect(again.map((j) => j.id)).toEqual([...ids, 'burst-40'].map((id) => exitAskId(id)));
    expect(await ask.queue.getDelayedCount()).toBe(41);
    expect((await ask.queue.getJob(exitAskId('burst-1')))?.opts.delay).toBe(3_600_000);

    // an add alone is an add
    bulks.length = 0;
    const one = await ask.add(exitAskId('alone'), { taskId: 'alone' }, { delay: 3_600_000 });
    expect(one.id).toBe(exitAskId('alone'));
    expect(bulks).toEqual([]);
  });

  it('a job due later waits a few ms for others: adds over several turns go together; one due now goes at once; close() sends what waits', async () => {
    const p = new Producer(exitAskQueue, host, redisOptions(REDIS_URL));
    const bulks: number[] = [];
    const addBulk = p.queue.addBulk.bind(p.queue);
    p.queue.addBulk = (jobs) => {
      bulks.push(jobs.length);
      return addBulk(jobs);
    };
    const turn = () => new Promise<void>((r) => setImmediate(r));
    const later: Array<Promise<unknown>> = [];
    for (let i = 0; i < 3; i++) {
      later.push(
        p.add(exitAskId(`later-${i}`), { taskId: `later-${i}` }, { delay: 3_600_000 }),
        p.add(exitAskId(`later-${i}b`), { taskId: `later-${i}b` }, { delay: 3_600_000 }),
      );
      await turn();
    }
    await Promise.all(later);
    expect(bulks).toEqual([6]);

    // a job due now is not held back, and takes those waiting with it
    bulks.length = 0;
    const waiting = p.add(exitAskId('waits'), { taskId: 'waits' }, { delay: 3_600_000 });
    const now = p.add(exitAskId('now'), { taskId: 'now' });
    await Promise.all([waiting, now]);
    expect(bulks).toEqual([2]);

    // closing sends what is still waiting before the connection goes
    const last = p.add(exitAskId('at-close'), { taskId: 'at-close' }, { delay: 3_600_000 });
    await p.close();
    expect(((await last) as { id?: string }).id).toBe(exitAskId('at-close'));
    expect((await ask.queue.getJob(exitAskId('at-close')))?.data).toEqual({ taskId: 'at-close' });
  });

  it('refuses bad data as a rejected promise, and the rest of its turn is still added', async () => {
    const good = ask.add(exitAskId('good'), { taskId: 'good' }, { delay: 3_600_000 });
    const bad = ask.add(exitAskId('bad'), { taskId: '' } as never);
    await expect(bad).rejects.toThrow();
    expect((await good).id).toBe(exitAskId('good'));
  });
});

describe('Producer.add with requeue (a chain step its chain still needs)', () => {
  it('a finished job goes back to the queue once, however many add it at once; a waiting, delayed or running one is left as it is', async () => {
    const until = untilWithin(20_000);
    const h = uniqueHost(); // a queue of its own: nothing else in it for the worker to take
    const mine = new Producer(exitAskQueue, h, redisOptions(REDIS_URL));
    const other = new Producer(exitAskQueue, h, redisOptions(REDIS_URL)); // another process's (a second reconcile)
    const runs = new Map<string, number>();
    let release: (() => void) | null = null;
    const worker = new Worker(
      mine.name,
      async (job) => {
        const id = String(job.data.taskId);
        runs.set(id, (runs.get(id) ?? 0) + 1);
        if (id === 'fails' && runs.get(id) === 1) throw new UnrecoverableError('its first run fails for good');
        if (id === 'held') await new Promise<void>((r) => (release = r));
      },
      { connection: redisOptions(REDIS_URL, true), prefix: PREFIX },
    );
    const state = (id: string) => mine.queue.getJobState(exitAskId(id));
    const requeue = (p: Producer<typeof exitAskQueue.schema>, id: string) => p.add(exitAskId(id), { taskId: id }, { requeue: true });
    try {
      await mine.add(exitAskId('done'), { taskId: 'done' });
      await mine.add(exitAskId('fails'), { taskId: 'fails' });
      await until('one completed, one failed', async () => (await state('done')) === 'completed' && (await state('fails')) === 'failed');
      // an add alone finds the id taken: nothing is added (the stall)
      await mine.add(exitAskId('done'), { taskId: 'done' });
      expect(await state('done')).toBe('completed');

      // nothing runs while the producers race: each finished job is moved back once, whoever moves it
      await worker.pause();
      await Promise.all(['done', 'fails'].flatMap((id) => [mine, other, mine, other].map((p) => requeue(p, id))));
      expect((await mine.queue.getWaiting()).map((j) => j.id).sort()).toEqual([exitAskId('done'), exitAskId('fails')]);
      expect((await mine.queue.getJob(exitAskId('fails')))?.attemptsMade).toBe(0); // its attempts start again
      worker.resume();
      await until('both ran again', async () => (await state('done')) === 'completed' && (await state('fails')) === 'completed');
      expect(Object.fromEntries(runs)).toEqual({ done: 2, fails: 2 });

      // a delayed job keeps its time
      await mine.add(exitAskId('later'), { taskId: 'later' }, { delay: 3_600_000 });
      await Promise.all([mine, other].map((p) => requeue(p, 'later')));
      expect(await state('later')).toBe('delayed');
      expect((await mine.queue.getJob(exitAskId('later')))?.opts.delay).toBe(3_600_000);

      // a running job runs once
      await mine.add(exitAskId('held'), { taskId: 'held' });
      await until('held running', async () => (await state('held')) === 'active');
      await Promise.all([mine, other].map((p) => requeue(p, 'held')));
      expect(await state('held')).toBe('active');
      release!();
      await until('held done', async () => (await state('held')) === 'completed');
      expect(runs.get('held')).toBe(1);
      expect(await mine.queue.getWaitingCount()).toBe(0);
    } finally {
      (release as (() => void) | null)?.();
      await worker.close();
      await Promise.all([mine.close(), other.close()]);
    }
  });
});
