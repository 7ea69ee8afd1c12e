// `sunset doctor`'s words and exit code, over the checks' findings. Pure.
import type { Finding, Status } from './checks.js';

export type Named = Finding & { name: string };

/** 0 = nothing to fix (warnings allowed), 1 = something must be fixed. */
export const DOCTOR_EXIT = { ok: 0, mustFix: 1 } as const;

export function doctorExit(findings: readonly Named[]): number {
  return findings.some((f) => f.status === 'fail') ? DOCTOR_EXIT.mustFix : DOCTOR_EXIT.ok;
}

const MARK: Record<Status, string> = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' };

/** A line each: `FAIL tasks         the tasks folder … does not exist — create it …`; then the sum. */
export function formatDoctor(findings: readonly Named[]): string {
  const width = Math.max(...findings.map((f) => f.name.length));
  const lines = findings.map((f) => `${MARK[f.status]} ${f.name.padEnd(width)}  ${f.says}${f.fix ? ` — ${f.fix}` : ''}`);
  const fails = findings.filter((f) => f.status === 'fail').length;
  const warns = findings.filter((f) => f.status === 'warn').length;
  const sum =
    fails > 0
      ? `${fails} to fix${warns ? `, ${warns} to look at` : ''}: sunset cannot do its work until the FAIL lines are fixed`
      : warns > 0
        ? `nothing to fix; ${warns} to look at`
        : 'all is well';
  return [...lines, '', sum].join('\n');
}

export function doctorJson(findings: readonly Named[]): Record<string, unknown> {
  return {
    ok: doctorExit(findings) === DOCTOR_EXIT.ok,
    failures: findings.filter((f) => f.status === 'fail').length,
    warnings: findings.filter((f) => f.status === 'warn').length,
    checks: findings.map((f) => ({ name: f.name, status: f.status, says: f.says, fix: f.fix ?? null })),
  };
}
