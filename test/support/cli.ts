// The built CLI, run as a person (or Claude Code's hooks) would: spawned, reading stdout, stderr and the exit code.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** dist/src/cli.js: `npm run build` first. */
export const CLI = fileURLToPath(new URL('../../dist/src/cli.js', import.meta.url));

export interface RunOptions {
  stdin?: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  cwd?: string;
}

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run a program to its end. It never throws for a non-zero exit; `stdin`, when given, is written and closed. */
export function run(cmd: string, args: string[], o: RunOptions = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      stdio: [o.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      env: { ...process.env, ...o.env },
      timeout: o.timeoutMs,
      cwd: o.cwd,
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin?.end(o.stdin);
  });
}

/** `sunset <args>`: the built CLI, run to its end. */
export const runCli = (args: string[], o: RunOptions = {}): Promise<Ran> => run(process.execPath, [CLI, ...args], o);
