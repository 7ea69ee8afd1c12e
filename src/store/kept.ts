// Resume, kept: a gzip copy of the transcript of every session sunset exited, in stateDir/kept, so that the
// conversation stays resumable after Claude Code's own cleanup (settings.json `cleanupPeriodDays`, 30 days by
// default) deleted `~/.claude/projects/<cwd slug>/<sessionId>.jsonl`. The transcript is all `claude --resume`
// needs (measured on the real CLI: docs/resume-and-memory.md). Per session, two files:
//   <sessionId>.jsonl.gz   the copy, written atomically (temp file, fsync, rename)
//   <sessionId>.json       what it is: the project folder it came from, when, its sizes; written after the copy
//                          (a copy without one is unfinished and not counted)
// `sunset resume` restores the transcript from it only where none is: created beside it and linked into place,
// so a transcript that appeared meanwhile is never overwritten. A copy goes when a person forgets it
// (`sunset exited --forget`), or resume.keepDays after it was made.
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync, gzip } from 'node:zlib';
import { z } from 'zod';
import type { Config } from '../config.js';
import { indexTranscripts } from '../evidence/files.js';
import { CREATE_FLAGS, errCode, fsyncDirSync, tempNameFor, unlinkIfThere, writeAllSync, writeFileAtomic } from './atomic-file.js';
import { readJson, safeName } from './state-files.js';
import { listExits } from './ledger.js';

const gzipAsync = promisify(gzip);
const MB = 1024 * 1024;
const DAY = 86_400_000;

/** Where an exited conversation resumes from: its transcript where Claude Code keeps it, sunset's copy, or nowhere. */
export type ResumeFrom = 'transcript' | 'kept copy' | 'gone';

const keptMetaSchema = z.object({
  sessionId: z.string().min(1),
  /** The folder under projectsDir the transcript was in (one path segment). */
  project: z.string().min(1),
  keptAt: z.string(),
  /** The transcript's size, and its copy's. */
  bytes: z.number().int().min(0),
  gzBytes: z.number().int().min(0),
});
export type KeptMeta = z.infer<typeof keptMetaSchema>;

/** A session id that can name a file in Claude Code's project folder: Claude Code's are UUIDs. */
export function transcriptNameOk(sessionId: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/.test(sessionId);
}
const projectOk = (p: string) => !p.includes('/') && !p.includes('\0') && p !== '.' && p !== '..';

const dirOf = (stateDir: string) => join(stateDir, 'kept');
const copyFile = (stateDir: string, sid: string) => join(dirOf(stateDir), `${safeName(sid)}.jsonl.gz`);
const metaFile = (stateDir: string, sid: string) => join(dirOf(stateDir), `${safeName(sid)}.json`);

/** The copy's record, or null (none, unfinished, or not one sunset wrote). */
export function readKept(stateDir: string, sessionId: string): KeptMeta | null {
  const m = keptMetaSchema.safeParse(readJson(metaFile(stateDir, sessionId)));
  return m.success && m.data.sessionId === sessionId && projectOk(m.data.project) ? m.data : null;
}

/** Every finished copy. */
export function listKept(stateDir: string): KeptMeta[] {
  let names: string[];
  try {
    names = readdirSync(dirOf(stateDir));
  } catch {
    return [];
  }
  const out: KeptMeta[] = [];
  for (const n of names) {
    if (!n.endsWith('.json')) continue;
    const m = keptMetaSchema.safeParse(readJson(join(dirOf(stateDir), n)));
    if (m.success && n === `${safeName(m.data.sessionId)}.json` && projectOk(m.data.project)) out.push(m.data);
  }
  return out;
}

/** When a copy is let go by itself (resume.keepDays after it was made), or null: kept until a person forgets it. */
export function keptUntil(meta: Pick<KeptMeta, 'keptAt'>, keepDays: number | null): string | null {
  return keepDays === null ? null : new Date(Date.parse(meta.keptAt) + keepDays * DAY).toISOString();
}

/** Pure: whether a new copy of `gzBytes` is made, given the others' total. Old copies are never dropped to make room. */
export function keepDecision(
  r: Pick<Config['resume'], 'keep' | 'maxMB'>,
  o: { othersBytes: number; gzBytes: number },
): { keep: true } | { keep: false; why: string } {
  if (!r.keep) return { keep: false, why: 'resume.keep is false' };
  const max = r.maxMB * MB;
  if (o.othersBytes + o.gzBytes > max)
    return {
      keep: false,
      why: `the copies would take ${fmtMB(o.othersBytes + o.gzBytes)} MB, over resume.maxMB (${r.maxMB}): forget some (sunset exited --forget) or raise it`,
    };
  return { keep: true };
}
const fmtMB = (b: number) => (b / MB).toFixed(1);

/** Pure: where each session resumes from, given which transcripts exist and which copies are kept. */
export function resumeFromOf(hasTranscript: boolean, kept: KeptMeta | null): ResumeFrom {
  return hasTranscript ? 'transcript' : kept ? 'kept copy' : 'gone';
}

/** sessionId → its transcript's path, for the wanted sessions (one readdir per project folder); null: projectsDir cannot be read. */
export function transcriptsOf(config: Pick<Config, 'fleet'>, wanted: Iterable<string>): Map<string, string> | null {
  const idx = indexTranscripts(config.fleet.projectsDir, new Set(wanted));
  if (idx instanceof Error) return null;
  return new Map([...idx].map(([sid, t]) => [sid, t.path]));
}

export type KeepResult = { kept: true; meta: KeptMeta; path: string; pruned: string[] } | { kept: false; why: string; pruned: string[] };

/** At the exit: copy the session's transcript (gzip, atomic), replacing an older copy of it. Never throws. */
export async function keepTranscript(
  config: Pick<Config, 'fleet' | 'stateDir' | 'resume'>,
  sessionId: string,
  now: number,
): Promise<KeepResult> {
  const pruned = pruneKept(config, now);
  try {
    if (!config.resume.keep) return { kept: false, why: 'resume.keep is false', pruned };
    const source = transcriptsOf(config, [sessionId])?.get(sessionId);
    if (!source) return { kept: false, why: `no transcript of it under ${config.fleet.projectsDir}`, pruned };
    const raw = readFileSync(source);
    const gz = await gzipAsync(raw);
    const othersBytes = listKept(config.stateDir)
      .filter((m) => m.sessionId !== sessionId)
      .reduce((a, m) => a + m.gzBytes, 0);
    const d = keepDecision(config.resume, { othersBytes, gzBytes: gz.length });
    if (!d.keep) return { kept: false, why: d.why, pruned };
    const project = source.slice(config.fleet.projectsDir.length + 1).split('/')[0]!;
    mkdirSync(dirOf(config.stateDir), { recursive: true });
    const path = copyFile(config.stateDir, sessionId);
    await writeFileAtomic(path, gz, { mode: 0o600 });
    const meta: KeptMeta = { sessionId, project, keptAt: new Date(now).toISOString(), bytes: raw.length, gzBytes: gz.length };
    await writeFileAtomic(metaFile(config.stateDir, sessionId), `${JSON.stringify(meta)}\n`, { mode: 0o600 });
    return { kept: true, meta, path, pruned };
  } catch (err) {
    return { kept: false, why: `copying its transcript failed: ${errCode(err) ?? (err as Error).message}`, pruned };
  }
}

/** Let a copy go: its record first (the copy is then unfinished), then the copy. Whether there was one. */
export function forgetKept(stateDir: string, sessionId: string): KeptMeta | null {
  const meta = readKept(stateDir, sessionId);
  unlinkIfThere(metaFile(stateDir, sessionId));
  unlinkIfThere(copyFile(stateDir, sessionId));
  return meta;
}

/** Copies past resume.keepDays go, and copies a writer left unfinished (no record) an hour on. The sessionIds let go. */
export function pruneKept(config: Pick<Config, 'stateDir' | 'resume'>, now: number): string[] {
  const gone: string[] = [];
  const { keepDays } = config.resume;
  const metas = listKept(config.stateDir);
  if (keepDays !== null)
    for (const m of metas)
      if (Date.parse(keptUntil(m, keepDays)!) <= now) {
        forgetKept(config.stateDir, m.sessionId);
        gone.push(m.sessionId);
      }
  const finished = new Set(metas.filter((m) => !gone.includes(m.sessionId)).map((m) => `${safeName(m.sessionId)}.jsonl.gz`));
  let names: string[] = [];
  try {
    names = readdirSync(dirOf(config.stateDir));
  } catch {
    /* none yet */
  }
  for (const n of names) {
    if (finished.has(n) || n.endsWith('.json')) continue;
    const f = join(dirOf(config.stateDir), n);
    try {
      if (now - statSync(f).mtimeMs > 3_600_000) unlinkIfThere(f);
    } catch {
      /* gone meanwhile */
    }
  }
  return gone;
}

export type RestoreResult =
  | { from: 'transcript'; path: string; restored: false }
  | { from: null; why: string }
  | { from: 'kept copy'; path: string; restored: true; bytes: number }
  | { from: 'gone'; why: string };

/**
 * Before a resume: where Claude Code has no transcript of the session, put the kept copy back where it was —
 * created beside it and linked into place, so a transcript that appeared meanwhile is kept, never overwritten.
 * The restored file is new (its mtime now), so Claude Code's cleanup does not take it again at once.
 */
export function restoreTranscript(config: Pick<Config, 'fleet' | 'stateDir'>, sessionId: string): RestoreResult {
  const index = transcriptsOf(config, [sessionId]);
  if (!index) return { from: null, why: `${config.fleet.projectsDir} cannot be read` }; // unknown: nothing is written
  const there = index.get(sessionId);
  if (there) return { from: 'transcript', path: there, restored: false };
  const meta = readKept(config.stateDir, sessionId);
  if (!meta) return { from: 'gone', why: `Claude Code no longer has its transcript and sunset kept no copy of it` };
  if (!transcriptNameOk(sessionId))
    return { from: 'gone', why: `its session id ${JSON.stringify(sessionId)} cannot name a transcript file` };
  let data: Buffer;
  try {
    data = gunzipSync(readFileSync(copyFile(config.stateDir, sessionId)));
  } catch (err) {
    return { from: 'gone', why: `its kept copy cannot be read (${errCode(err) ?? (err as Error).message})` };
  }
  const folder = join(config.fleet.projectsDir, meta.project);
  const dest = join(folder, `${sessionId}.jsonl`);
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  const tmp = tempNameFor(dest);
  const fd = openSync(tmp, CREATE_FLAGS, 0o600);
  try {
    writeAllSync(fd, data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, dest);
  } catch (err) {
    if (errCode(err) !== 'EEXIST') throw err;
    return { from: 'transcript', path: dest, restored: false }; // one appeared meanwhile: it stays
  } finally {
    unlinkIfThere(tmp);
  }
  fsyncDirSync(folder);
  return { from: 'kept copy', path: dest, restored: true, bytes: data.length };
}

/**
 * At `sunset up`'s start: copies past resume.keepDays go; and each session sunset exited that has no copy while its
 * transcript is still there gets one — exits from before copies were kept, or one whose copy a crash between the
 * exit and the copy lost.
 */
export async function keepMissed(
  config: Pick<Config, 'fleet' | 'stateDir' | 'resume'>,
  now: number,
): Promise<{ kept: string[]; notKept: Array<{ sessionId: string; why: string }>; pruned: string[] }> {
  const out = { kept: [] as string[], notKept: [] as Array<{ sessionId: string; why: string }>, pruned: pruneKept(config, now) };
  if (!config.resume.keep) return out;
  const have = new Set(listKept(config.stateDir).map((m) => m.sessionId));
  const missing = [
    ...new Set(
      listExits(config.stateDir)
        .filter((r) => r.outcome === 'exited' && !have.has(r.sessionId))
        .map((r) => r.sessionId),
    ),
  ];
  const there = missing.length ? transcriptsOf(config, missing) : null;
  for (const sid of missing) {
    if (!there?.has(sid)) continue; // gone already (or unknown): nothing to copy
    const k = await keepTranscript(config, sid, now);
    if (k.kept) out.kept.push(sid);
    else out.notKept.push({ sessionId: sid, why: k.why });
  }
  return out;
}
