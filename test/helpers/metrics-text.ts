/** Reading Prometheus text exposition in tests: the samples of one metric whose labels include `labels`. */
export function metricSamples(text: string, name: string, labels: Record<string, string> = {}): number[] {
  const out: number[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{([^}]*)\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = new Map<string, string>();
    for (const lm of (m[3] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) have.set(lm[1]!, lm[2]!);
    if (Object.entries(labels).every(([k, v]) => have.get(k) === v)) out.push(Number(m[4]));
  }
  return out;
}
