// HTML as plain template strings, escaped by default: every value interpolated into `html` is escaped
// unless it is itself Html (built by `html` or `raw`), so nothing read from the fleet can inject markup.
export class Html {
  constructor(readonly text: string) {}
  toString() {
    return this.text;
  }
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"'`]/g, (c) => ENTITIES[c]);
}

type Part = Html | string | number | boolean | null | undefined | Part[];

function render(v: Part): string {
  if (v === null || v === undefined || v === false) return '';
  if (v instanceof Html) return v.text;
  if (Array.isArray(v)) return v.map(render).join('');
  return escapeHtml(v);
}

export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new Html(out);
}

/** Trusted markup only: constants written in this module's own source, never data. */
export function raw(text: string): Html {
  return new Html(text);
}
