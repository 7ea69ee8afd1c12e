// Every child process sunset starts goes through here: an argv (never a shell) and a timeout.
// A probe child past its timeout is the only kind of process sunset itself ever signals (execa's
// `timeout` option ends the child it started), which doctrine D1 permits: it is sunset's own child.
import { execa } from 'execa';
import { errorMessage } from './errors.js';

export interface RunResult {
  ok: boolean;
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  error?: string;
}

let spawned = 0;
/** How many child processes this process has started (the sweep bench counts them). */
export function childCount(): number {
  return spawned;
}

export async function run(
  argv: readonly string[],
  opts: { timeoutMs: number; input?: string; cwd?: string; maxBuffer?: number },
): Promise<RunResult> {
  const [file, ...args] = argv;
  if (!file) return { ok: false, exitCode: null, stdout: '', stderr: '', timedOut: false, error: 'empty command' };
  spawned++;
  try {
    const r = await execa(file, args, {
      timeout: opts.timeoutMs,
      reject: false,
      input: opts.input,
      cwd: opts.cwd,
      stdin: opts.input === undefined ? 'ignore' : 'pipe',
      maxBuffer: opts.maxBuffer ?? 64 * 1024 * 1024,
      stripFinalNewline: false,
      shell: false,
    });
    const stdout = typeof r.stdout === 'string' ? r.stdout : '';
    const stderr = typeof r.stderr === 'string' ? r.stderr : '';
    const ok = !r.failed && r.exitCode === 0;
    return {
      ok,
      exitCode: r.exitCode ?? null,
      stdout,
      stderr,
      timedOut: Boolean(r.timedOut),
      error: ok ? undefined : r.timedOut ? `timed out after ${opts.timeoutMs} ms` : (r.shortMessage ?? `exit code ${r.exitCode}`),
    };
  } catch (err) {
    return { ok: false, exitCode: null, stdout: '', stderr: '', timedOut: false, error: errorMessage(err) };
  }
}
