// What a `sunset doctor` check finds: ok, warn (it works, with less) or fail (sunset cannot do its work until
// it is fixed), a sentence, and what to do about it.
import type { Config } from '../config.js';

export type Status = 'ok' | 'warn' | 'fail';

export interface Finding {
  status: Status;
  /** What was found, in a sentence. */
  says: string;
  /** What to do about it (warn and fail). */
  fix?: string;
}

export interface DoctorContext {
  config: Config;
  env: NodeJS.ProcessEnv;
  cwd: string;
  home: string;
  /** Bounds each probe (a child process, a connection). */
  timeoutMs: number;
  /** The config file named on the command line (--config), to be named again in a fix. */
  configFile?: string;
}

export interface Check {
  name: string;
  run: (ctx: DoctorContext) => Promise<Finding> | Finding;
}

/** A child's failure in one line: "not found" for a program that is not there. */
export const why = (error: string | undefined) => (/\bENOENT\b/.test(error ?? '') ? 'not found' : (error ?? 'failed').split('\n')[0]);

export const ok = (says: string): Finding => ({ status: 'ok', says });
export const warn = (says: string, fix: string): Finding => ({ status: 'warn', says, fix });
export const fail = (says: string, fix: string): Finding => ({ status: 'fail', says, fix });
