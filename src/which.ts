// Where a program is, as execa would find it, without running it (sunset doctor, an alarm command's probe).
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

/** An executable's path as execa would find it: a path with a `/` as it is, else the first on PATH. */
export function whichFile(file: string, env: NodeJS.ProcessEnv, cwd: string): string | null {
  const candidates = file.includes('/')
    ? [isAbsolute(file) ? file : join(cwd, file)]
    : (env.PATH ?? '')
        .split(delimiter)
        .filter(Boolean)
        .map((d) => join(d, file));
  for (const f of candidates) {
    try {
      if (!statSync(f).isFile()) continue;
      accessSync(f, constants.X_OK);
      return f;
    } catch {
      /* not this one */
    }
  }
  return null;
}
