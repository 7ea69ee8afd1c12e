// Reading one sample of a Prometheus text exposition (/metrics), as the tests of each gauge do.

/** The value of the sample named exactly `name` (labels included: `sunset_agent_sessions{agent="codex"}`); undefined when absent. */
export function metric(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name.replace(/[{}"=,]/g, '\\$&')} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}
