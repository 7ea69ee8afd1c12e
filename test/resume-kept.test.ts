// Resume, kept: a copy of each exited session's transcript in stateDir/kept, put back by `sunset resume` after
// Claude Code's cleanup (cleanupPeriodDays) deleted the transcript. The store on real files; the whole path on the
// test fleet (the real CLI's own run is test/real-resume-kept.test.ts).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../sim/fleet/fleet.js';
import { parseConfig, type Config } from '../src/config.js';
import {
  keepDecision,
  keepMissed,
  keepTranscript,
  keptUntil,
  listKept,
  pruneKept,
  readKept,
  restoreTranscript,
} from '../src/store/kept.js';
import { writeExit } from '../src/store/ledger.js';
import { entryJson, resumeEntries, resumeLines, withResumeFrom, type ResumeEntry } from '../src/report/resume.js';
import { exitedSection } from '../src/web/fleet-history.js';
import { CLI, runCli } from './support/cli.js';
import { startTestSunset, testConfig, uniqueHost } from './support/sunset.js';
import { useFleet } from './support/use-fleet.js';
import { tempDir } from './support/temp-dir.js';

const H = 3_600_000;
const DAY = 24 * H;
const SID = '5aee89f1-66b6-42c5-a4df-eb4c77b05785';

/** A config on a temp stateDir and projectsDir; a transcript of `lines` lines in a project folder. */
function setup(resume: Record<string, unknown> = {}) {
  const root = tempDir('sunset-kept-');
  const config = parseConfig({ stateDir: join(root, 'state'), fleet: { projectsDir: join(root, 'projects') }, resume }, { env: {} });
  const folder = join(config.fleet.projectsDir, '-home-me-work-ship');
  const transcript = (sid = SID, lines = 200) => {
    mkdirSync(folder, { recursive: true });
    const file = join(folder, `${sid}.jsonl`);
    const text = Array.from({ length: lines }, (_, i) => JSON.stringify({ type: 'user', n: i, sessionId: sid, text: `turn ${i}` })).join(
      '\n',
    );
    writeFileSync(file, `${text}\n`);
    return { file, text: `${text}\n` };
  };
  return { root, config, folder, transcript };
}

describe('kept copies (pure)', () => {
  it('a copy is made within resume.maxMB, never past it, and not when resume.keep is false', () => {
    const MB = 1024 * 1024;
    expect(keepDecision({ keep: true, maxMB: 10 }, { othersBytes: 9 * MB, gzBytes: MB })).toEqual({ keep: true });
    const over = keepDecision({ keep: true, maxMB: 10 }, { othersBytes: 9 * MB, gzBytes: MB + 1 });
    expect(over).toMatchObject({ keep: false, why: expect.stringMatching(/over resume\.maxMB \(10\).*sunset exited --forget/) });
    expect(keepDecision({ keep: false, maxMB: 10 }, { othersBytes: 0, gzBytes: 1 })).toEqual({ keep: false, why: 'resume.keep is false' });
    expect(keptUntil({ keptAt: '2026-12-01T00:00:00.000Z' }, 30)).toBe('2026-12-31T00:00:00.000Z');
    expect(keptUntil({ keptAt: '2026-12-01T00:00:00.000Z' }, null)).toBeNull();
  });

  it('each exited entry says where it resumes from: its transcript, the kept copy, or gone; unknown when projects cannot be read', () => {
    const cfg = parseConfig({}, { env: {} });
    const rec = (sessionId: string, finishedAt: string) => ({
      jobId: sessionId,
      reason: 'job' as const,
      sessionId,
      outcome: 'exited' as const,
      finishedAt,
    });
    const entries = resumeEntries(
      cfg,
      [rec('a', '2026-12-01T00:00:00Z'), rec('b', '2026-12-02T00:00:00Z'), rec('c', '2026-12-03T00:00:00Z')],
      [],
    );
    const kept = [{ sessionId: 'b', project: 'p', keptAt: '2026-12-02T00:00:00.000Z', bytes: 1000, gzBytes: 100 }];
    const by = (sid: string, t: Set<string> | null) => withResumeFrom(entries, t, kept, 7).find((e) => e.sessionId === sid)!;
    expect(by('a', new Set(['a']))).toMatchObject({ resumeFrom: 'transcript', kept: null });
    expect(by('b', new Set(['a']))).toMatchObject({
      resumeFrom: 'kept copy',
      kept: { bytes: 1000, gzBytes: 100, keptAt: '2026-12-02T00:00:00.000Z', until: '2026-12-09T00:00:00.000Z' },
    });
    expect(by('b', new Set(['b'])).resumeFrom).toBe('transcript');
    expect(by('c', new Set(['a']))).toMatchObject({ resumeFrom: 'gone', kept: null });
    expect(by('c', null).resumeFrom).toBeNull();
  });

  it('offers only the resume commands that work: both from the transcript, sunset resume alone from the kept copy, none when gone', () => {
    const cfg = parseConfig({}, { env: {} });
    const [e] = resumeEntries(
      cfg,
      [
        {
          jobId: 'j',
          reason: 'chain',
          taskId: 'tk',
          sessionId: SID,
          cwd: '/w/ship',
          outcome: 'exited',
          finishedAt: '2026-12-01T00:00:00Z',
        },
      ],
      [],
    );
    const kept = [{ sessionId: SID, project: 'p', keptAt: '2026-12-01T00:00:00.000Z', bytes: 1000, gzBytes: 100 }];
    const fromTranscript = withResumeFrom([e!], new Set([SID]), kept, null)[0]!;
    const fromCopy = withResumeFrom([e!], new Set(), kept, null)[0]!;
    const gone = withResumeFrom([e!], new Set(), [], null)[0]!;
    const unknown = withResumeFrom([e!], null, [], null)[0]!;
    const raw = `(cd /w/ship && claude --resume ${SID})`;
    expect(resumeLines(fromTranscript)).toEqual({ shell: raw, sunset: 'sunset resume tk' });
    expect(resumeLines(unknown)).toEqual({ shell: raw, sunset: 'sunset resume tk' }); // not known: both, as before
    expect(resumeLines(fromCopy)).toEqual({ shell: null, sunset: 'sunset resume tk' }); // the raw one finds no conversation
    expect(resumeLines(gone)).toBeNull();
    // --json and GET /api/exited: the raw argv only where it works; sunsetResume where sunset can bring it back
    expect(entryJson(fromTranscript)).toMatchObject({ resume: ['claude', '--resume', SID], sunsetResume: 'sunset resume tk' });
    expect(entryJson(fromCopy)).toMatchObject({ resumeFrom: 'kept copy', resume: [], sunsetResume: 'sunset resume tk' });
    expect(entryJson(gone)).toMatchObject({ resumeFrom: 'gone', resume: [], sunsetResume: null });
    // the web's exited table says the same
    const page = (x: ResumeEntry) => String(exitedSection([x], Date.parse('2026-12-02T00:00:00Z')));
    expect(page(fromTranscript)).toContain('claude --resume');
    expect(page(fromCopy)).not.toContain('claude --resume');
    expect(page(fromCopy)).toMatch(/sunset resume tk<\/code><span class="sub">puts sunset's kept copy of the transcript back first/);
    expect(page(gone)).not.toMatch(/claude --resume|<code class="copy"/);
    expect(page(gone)).toContain('cannot be resumed: no transcript and no kept copy');
  });
});

describe('kept copies (files)', () => {
  it('keeps a gzip copy that reads back byte for byte, replaces it at a later exit, and records where it came from', async () => {
    const s = setup();
    const t = s.transcript(SID, 500);
    const k = await keepTranscript(s.config, SID, Date.parse('2026-12-01T00:00:00Z'));
    if (!k.kept) throw new Error(k.why);
    expect(gunzipSync(readFileSync(k.path)).toString()).toBe(t.text);
    expect(k.meta).toEqual({
      sessionId: SID,
      project: '-home-me-work-ship',
      keptAt: '2026-12-01T00:00:00.000Z',
      bytes: t.text.length,
      gzBytes: statSync(k.path).size,
    });
    expect(k.meta.gzBytes).toBeLessThan(k.meta.bytes / 4);
    expect(statSync(k.path).mode & 0o077).toBe(0); // the person's conversation: readable by them only
    const longer = s.transcript(SID, 900); // resumed and exited again: the copy is the newer transcript
    const again = await keepTranscript(s.config, SID, Date.parse('2026-12-05T00:00:00Z'));
    expect(again.kept).toBe(true);
    expect(gunzipSync(readFileSync(k.path)).toString()).toBe(longer.text);
    expect(listKept(s.config.stateDir)).toEqual([expect.objectContaining({ sessionId: SID, keptAt: '2026-12-05T00:00:00.000Z' })]);
  });

  it('makes no copy past resume.maxMB (old ones stay), when off, or of a session with no transcript', async () => {
    const s = setup({ maxMB: 0 });
    s.transcript();
    const k = await keepTranscript(s.config, SID, Date.now());
    expect(k).toMatchObject({ kept: false, why: expect.stringContaining('over resume.maxMB (0)') });
    expect(listKept(s.config.stateDir)).toEqual([]);
    const off = setup({ keep: false });
    off.transcript();
    expect(await keepTranscript(off.config, SID, Date.now())).toMatchObject({ kept: false, why: 'resume.keep is false' });
    const none = setup();
    expect(await keepTranscript(none.config, SID, Date.now())).toMatchObject({
      kept: false,
      why: expect.stringContaining('no transcript'),
    });
  });

  it('lets copies go resume.keepDays after they were made, and unfinished ones an hour on', async () => {
    const s = setup({ keepDays: 30 });
    s.transcript('old-one');
    s.transcript('new-one');
    const t0 = Date.parse('2026-11-01T00:00:00Z');
    await keepTranscript(s.config, 'old-one', t0);
    await keepTranscript(s.config, 'new-one', t0 + 20 * DAY);
    const stray = join(s.config.stateDir, 'kept', '.x.jsonl.gz.sunset-1-000000000000.tmp');
    writeFileSync(stray, 'half');
    expect(pruneKept(s.config, t0 + 29 * DAY)).toEqual([]);
    expect(existsSync(stray)).toBe(true);
    utimesSync(stray, new Date(t0), new Date(t0));
    expect(pruneKept(s.config, t0 + 30 * DAY)).toEqual(['old-one']);
    expect(listKept(s.config.stateDir).map((m) => m.sessionId)).toEqual(['new-one']);
    expect(existsSync(join(s.config.stateDir, 'kept', 'old-one.jsonl.gz'))).toBe(false);
    expect(existsSync(stray)).toBe(false);
  });

  it('restores a deleted transcript where it was, only where none is, and never over a newer one', async () => {
    const s = setup();
    const t = s.transcript();
    await keepTranscript(s.config, SID, Date.now());
    expect(restoreTranscript(s.config, SID)).toEqual({ from: 'transcript', path: t.file, restored: false });
    unlinkSync(t.file); // Claude Code's cleanup
    const r = restoreTranscript(s.config, SID);
    expect(r).toEqual({ from: 'kept copy', path: t.file, restored: true, bytes: t.text.length });
    expect(readFileSync(t.file, 'utf8')).toBe(t.text);
    expect(Date.now() - statSync(t.file).mtimeMs).toBeLessThan(60_000); // new: the cleanup does not take it again at once
    writeFileSync(t.file, `${t.text}{"type":"user","text":"later"}\n`); // resumed: it grew
    expect(restoreTranscript(s.config, SID)).toMatchObject({ from: 'transcript', restored: false });
    expect(readFileSync(t.file, 'utf8')).toContain('later');
    // a transcript in another project folder (resumed from elsewhere) is one too: nothing is written
    unlinkSync(t.file);
    const other = join(s.config.fleet.projectsDir, '-elsewhere');
    mkdirSync(other);
    writeFileSync(join(other, `${SID}.jsonl`), 'x\n');
    expect(restoreTranscript(s.config, SID)).toMatchObject({ from: 'transcript', path: join(other, `${SID}.jsonl`) });
    expect(existsSync(t.file)).toBe(false);
  });

  it('says gone with no copy, or a copy that cannot be read; writes nothing outside its project folder', async () => {
    const s = setup();
    expect(restoreTranscript(s.config, SID)).toMatchObject({ from: 'gone', why: expect.stringContaining('kept no copy') });
    const t = s.transcript();
    await keepTranscript(s.config, SID, Date.now());
    unlinkSync(t.file);
    writeFileSync(join(s.config.stateDir, 'kept', `${SID}.jsonl.gz`), 'not gzip');
    expect(restoreTranscript(s.config, SID)).toMatchObject({ from: 'gone', why: expect.stringContaining('cannot be read') });
    expect(existsSync(t.file)).toBe(false);
    // a record naming a folder outside projectsDir is not one sunset wrote: not read
    const meta = join(s.config.stateDir, 'kept', `${SID}.json`);
    writeFileSync(meta, JSON.stringify({ ...JSON.parse(readFileSync(meta, 'utf8')), project: '../../etc' }));
    expect(readKept(s.config.stateDir, SID)).toBeNull();
    expect(restoreTranscript(s.config, SID)).toMatchObject({ from: 'gone' });
  });
});

describe('kept copies of earlier exits', () => {
  it('at the start, keeps a copy of each exited session with none while its transcript is there', async () => {
    const s = setup();
    const at = '2026-12-01T00:00:00.000Z';
    for (const [jobId, sid, outcome] of [
      ['j1', 'with-transcript', 'exited'],
      ['j2', 'with-transcript', 'exited'], // exited twice: one copy
      ['j3', 'transcript-gone', 'exited'],
      ['j4', 'spared-one', 'spared'],
      ['j5', 'already-kept', 'exited'],
    ] as const)
      writeExit(s.config.stateDir, { jobId, reason: 'job', sessionId: sid, outcome, finishedAt: at });
    s.transcript('with-transcript');
    s.transcript('spared-one');
    s.transcript('already-kept');
    await keepTranscript(s.config, 'already-kept', Date.parse(at));
    expect(await keepMissed(s.config, Date.now())).toEqual({ kept: ['with-transcript'], notKept: [], pruned: [] });
    expect(
      listKept(s.config.stateDir)
        .map((m) => m.sessionId)
        .sort(),
    ).toEqual(['already-kept', 'with-transcript']);
    expect(readKept(s.config.stateDir, 'already-kept')?.keptAt).toBe(at); // not copied again
    expect(await keepMissed({ ...s.config, resume: { ...s.config.resume, keep: false } }, Date.now())).toEqual({
      kept: [],
      notKept: [],
      pruned: [],
    });
    // past resume.keepDays, at the start: let go
    const later = { ...s.config, resume: { ...s.config.resume, keepDays: 1 } };
    expect((await keepMissed(later, Date.now() + 2 * DAY)).pruned.sort()).toEqual(['already-kept', 'with-transcript']);
  });
});

describe('sunset exited, a line an exit', () => {
  it("names another agent CLI's session by its agent, Claude Code's by its kind", async () => {
    const { root, config } = setup();
    const at = '2026-12-01T00:00:00.000Z';
    writeExit(config.stateDir, {
      jobId: 'a',
      reason: 'request',
      taskId: 't-codex',
      sessionId: SID,
      kind: 'interactive',
      outcome: 'exited',
      finishedAt: at,
      ...{ agent: 'codex' },
    });
    writeExit(config.stateDir, {
      jobId: 'b',
      reason: 'request',
      taskId: 't-cc',
      sessionId: `${SID.slice(0, -1)}6`,
      kind: 'background',
      id: 'ab12cd34',
      outcome: 'exited',
      finishedAt: at,
    });
    const file = join(root, 'sunset.config.json');
    writeFileSync(file, JSON.stringify({ stateDir: config.stateDir, fleet: { projectsDir: config.fleet.projectsDir } }));
    const r = await runCli(['exited', '--config', file]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/exited +5aee89f1 +codex task t-codex/);
    expect(r.stdout).toMatch(/exited +ab12cd34 +background task t-cc/);
  });
});

describe('resume, kept, on the test fleet', () => {
  const ctx = useFleet();

  it('a session sunset exited keeps its copy; with its transcript deleted, exited says "kept copy", resume puts it back; forgotten, it is gone', async () => {
    const host = uniqueHost();
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 'tk', state: 'done', sessionId: a.sessionId });
    const config: Config = testConfig(ctx.fleet, { host });
    ctx.sunset = await startTestSunset(config);
    expect(await waitFor(() => Boolean(ctx.fleet.readTask('tk').exitedAt), 30_000)).toBe(true);
    expect(await waitFor(() => ctx.sunset!.events.some((e) => e.event === 'resume:kept' && e.sessionId === a.sessionId), 10_000)).toBe(
      true,
    );
    const text = readFileSync(a.transcriptPath, 'utf8');
    const cfg = ctx.fleet.writeConfig({ host });
    const listed = async () => JSON.parse((await runCli(['exited', '--json', '--config', cfg])).stdout);
    let l = await listed();
    expect(l.entries).toMatchObject([{ sessionId: a.sessionId, resumeFrom: 'transcript', kept: { bytes: Buffer.byteLength(text) } }]);
    expect(l.kept).toMatchObject({ copies: 1, maxMB: 1024, keepDays: null, keep: true });

    unlinkSync(a.transcriptPath); // the way Claude Code's cleanup deletes it
    l = await listed();
    expect(l.entries[0]).toMatchObject({ resumeFrom: 'kept copy' });
    const plain = await runCli(['exited', '--config', cfg]);
    expect(plain.stdout).toMatch(/resumable: from sunset's kept copy \(\d+ B kept\): Claude Code deleted its transcript/);
    // only the command that works: the raw `claude --resume` finds no conversation without the transcript
    expect(plain.stdout).toMatch(/^ {4}resume: sunset resume tk {3}\(puts sunset's kept copy of the transcript back first\)$/m);
    expect(plain.stdout).not.toContain('claude --resume');
    expect(l.entries[0]).toMatchObject({ resume: [], sunsetResume: 'sunset resume tk' });
    expect(plain.stdout).toMatch(/kept copies: 1, \d+ B of resume\.maxMB 1024 MB; each kept until forgotten/);

    // sunset resume puts it back, then resumes (a background session runs here, and passes on its exit code)
    await ctx.sunset.close();
    ctx.sunset = null;
    const child = spawn(process.execPath, [CLI, 'resume', 'tk', '--config', cfg], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const code = new Promise<number | null>((res) => child.on('exit', (c) => res(c)));
    expect(await waitFor(() => typeof ctx.fleet.row(a)?.pid === 'number' && ctx.fleet.isAlive(ctx.fleet.row(a)!.pid), 20_000)).toBe(true);
    expect(readFileSync(a.transcriptPath, 'utf8').startsWith(text)).toBe(true);
    await ctx.fleet.stop(a.id);
    expect(await code).toBe(0);
    expect(stderr).toContain(`put sunset's kept copy back at ${a.transcriptPath}`);

    // forgotten, and the transcript deleted again: gone, and resume says so and runs nothing
    const forgot = await runCli(['exited', '--forget', 'tk', '--config', cfg]);
    expect(forgot.code).toBe(0);
    expect(forgot.stdout).toMatch(/let the kept copy of .* go/);
    expect((await runCli(['exited', '--forget', 'tk', '--config', cfg])).stdout).toMatch(/nothing to forget/);
    expect((await runCli(['exited', '--forget', 'nope', '--config', cfg])).code).toBe(2);
    unlinkSync(a.transcriptPath);
    expect((await listed()).entries[0]).toMatchObject({ resumeFrom: 'gone', kept: null, resume: [], sunsetResume: null });
    const goneList = (await runCli(['exited', '--config', cfg])).stdout;
    expect(goneList).toMatch(/^ {4}resume: none — it cannot be resumed$/m);
    expect(goneList).not.toMatch(/claude --resume|sunset resume tk/);
    const gone = await runCli(['resume', 'tk', '--config', cfg]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/cannot be resumed: Claude Code no longer has its transcript and sunset kept no copy of it/);
    expect(existsSync(a.transcriptPath)).toBe(false);
  });
  it('a task naming its session by the short id: the exit is recorded under the whole sessionId, its copy kept', async () => {
    const host = uniqueHost();
    const a = await ctx.fleet.spawnBackground({ transcriptAgeMs: H });
    ctx.fleet.writeTask({ id: 'short', state: 'done', sessionId: a.id }); // the short id a task may name (README)
    ctx.sunset = await startTestSunset(testConfig(ctx.fleet, { host }));
    expect(await waitFor(() => Boolean(ctx.fleet.readTask('short').exitedAt), 30_000)).toBe(true);
    expect(await waitFor(() => ctx.sunset!.events.some((e) => e.event === 'resume:kept' && e.sessionId === a.sessionId), 10_000)).toBe(
      true,
    );
    const l = JSON.parse((await runCli(['exited', '--json', '--config', ctx.fleet.writeConfig({ host })])).stdout);
    expect(l.entries).toMatchObject([
      { taskId: 'short', sessionId: a.sessionId, resumeFrom: 'transcript', kept: { bytes: expect.any(Number) } },
    ]);
  });
});
