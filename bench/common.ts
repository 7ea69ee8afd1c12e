// What the benches share: order statistics, machine facts, and one way to print a figure against its target.
import { cpus, loadavg } from 'node:os';
import { availableParallelism } from 'node:os';

/** The q-quantile (0..1) of a sample, nearest-rank. NaN for an empty sample. */
export function quantile(values: readonly number[], q: number): number {
  if (!values.length) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const rank = Math.ceil(q * s.length);
  return s[Math.min(s.length - 1, Math.max(0, rank - 1))];
}

export const median = (v: readonly number[]): number => quantile(v, 0.5);

/** ms with one decimal under 100, whole above. */
export function ms(v: number): string {
  if (!Number.isFinite(v)) return 'n/a';
  return v < 100 ? v.toFixed(1) : Math.round(v).toString();
}

export function load(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
}

export function machine(): string {
  const cpu = cpus()[0]?.model?.trim() ?? 'unknown cpu';
  return `nproc ${availableParallelism()} (${cpu}), Node ${process.version}, ${process.platform} ${process.arch}, load average ${load()}`;
}

/** One figure against its target, the way every bench prints it. */
export interface Figure {
  bench: string;
  name: string;
  value: string;
  target: string;
  /** null: informational (a floor), no target. */
  pass: boolean | null;
  floor?: string;
}

/** A measured quantity with its unit, e.g. `0.9 ms`, `39.5 MB`, `0.13 %`, `759/s` (not the 99 of `p99`). */
const QUANTITY = /\d[\d.,]*\s?(?:ms|s|MB|KB|B|%|\/s|tasks\/s|jobs\/s)(?![A-Za-z])/;

/** `text` in at most `max` characters: whole if it fits; else from its first quantity on (the number is what a summary is for), cut with "…". */
export function fitCell(text: string, max: number, numberFirst: boolean): string {
  if (text.length <= max) return text;
  const m = numberFirst ? QUANTITY.exec(text) : null;
  const from = m && m.index > 0 ? `…${text.slice(m.index)}` : text;
  return from.length <= max ? from : `${from.slice(0, max - 1)}…`;
}

/**
 * The summary: one line a figure, in `width` columns (120 by default) — verdict, bench, figure, value and floor,
 * the value and floor from their first quantity where cut. Each figure's whole line (its target too) is printed
 * above it, where it was measured.
 */
export function summaryLines(figures: readonly Figure[], width = 120): string[] {
  const head = ['verdict', 'bench', 'figure', 'value', 'floor'];
  const benchW = Math.max(5, ...figures.map((f) => f.bench.length));
  const rest = Math.max(60, width - 7 - benchW - 4 * 3); // figure + value + floor
  const widths = [7, benchW, Math.floor(rest * 0.4), Math.floor(rest * 0.32), rest - Math.floor(rest * 0.4) - Math.floor(rest * 0.32)];
  const rows = figures.map((f) => [
    verdict(f.pass),
    f.bench,
    fitCell(f.name, widths[2], false),
    fitCell(f.value, widths[3], true),
    fitCell(f.floor ?? '', widths[4], true),
  ]);
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i]))
      .join(' | ')
      .trimEnd();
  return [line(head), widths.map((w) => '-'.repeat(w)).join('-|-'), ...rows.map(line)];
}

export function verdict(pass: boolean | null): string {
  return pass === null ? 'info' : pass ? 'PASS' : 'FAIL';
}

export function printFigure(f: Figure): void {
  const floor = f.floor ? ` — floor ${f.floor}` : '';
  const target = f.target ? ` — target ${f.target}` : '';
  console.log(`${f.name}: ${f.value}${floor}${target}: ${verdict(f.pass)}`);
}

export const sleep = (msec: number): Promise<void> => new Promise((r) => setTimeout(r, msec));

/** Time one async call, in ms (high resolution). */
export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = process.hrtime.bigint();
  const value = await fn();
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, value };
}

/** Run cleanups in reverse order of registration, each even if an earlier one failed. */
export class Cleanup {
  /** Every Cleanup with something left to do: run.ts runs them on SIGINT / SIGTERM. */
  static readonly pending = new Set<Cleanup>();
  private readonly fns: Array<{ what: string; fn: () => unknown }> = [];
  add(what: string, fn: () => unknown): void {
    this.fns.push({ what, fn });
    Cleanup.pending.add(this);
  }
  static async runAll(): Promise<void> {
    for (const c of [...Cleanup.pending].reverse()) await c.run();
  }
  async run(): Promise<void> {
    Cleanup.pending.delete(this);
    while (this.fns.length) {
      const { what, fn } = this.fns.pop()!;
      try {
        await fn();
      } catch (err: any) {
        console.error(`bench cleanup: ${what} failed: ${err?.message ?? err}`);
      }
    }
  }
}

/**
 * With BENCH_PROFILE=<dir>, records a CPU profile (.cpuprofile, for Chrome DevTools or speedscope) of
 * this process while fn runs: only the measured window, not the set-up. Without it, just runs fn.
 */
export async function profiled<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const dir = process.env.BENCH_PROFILE;
  if (!dir) return fn();
  const { Session } = await import('node:inspector/promises');
  const { mkdirSync, writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await fn();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `${name}-${Date.now()}.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    console.log(`  (profile of ${name}: ${file})`);
  }
}
