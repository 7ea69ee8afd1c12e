// What a caught value says, read safely: a catch clause's value is `unknown` (anything can be thrown).

/** What went wrong, in words: an Error's message, else the thrown value as text. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** A system error's code (`ENOENT`, `EACCES`, …), else undefined. */
export function errorCode(err: unknown): string | undefined {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
}

/** The exit code an error carries for the CLI (UsageError, ConfigError, a failure written for a person), else undefined. */
export function errorExitCode(err: unknown): number | undefined {
  const code = typeof err === 'object' && err !== null ? (err as { exitCode?: unknown }).exitCode : undefined;
  return typeof code === 'number' ? code : undefined;
}
