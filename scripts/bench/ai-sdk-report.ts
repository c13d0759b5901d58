/** The project set against Temporal's own AI integration, `@temporalio/ai-sdk`, for the printed table. */
import type { SystemFigures } from './phases';
import type { BenchResults } from './results';

const ratio = (a: number | undefined, b: number | undefined): string =>
  a !== undefined && b !== undefined && b !== 0 && Number.isFinite(a) && Number.isFinite(b)
    ? `${(a / b).toFixed(2)}×`
    : '–';

/**
 * Lines comparing each measured project mode with `@temporalio/ai-sdk` at the same model latency (value ÷ its value):
 * steps/s at the high concurrency (above 1: the project does more), ms/step at the medium concurrency and at 1, and
 * worker CPU per step (below 1: the project takes less). Empty when the AI SDK part or every project part is missing.
 */
export function formatAgainstAiSdk(r: BenchResults): string[] {
  const aiSdk = r.aiSdk;
  const modes: [string, SystemFigures[] | undefined][] = [
    ['project', r.project],
    ['project, local activities', r.projectLocal],
    ['project, local tool calls', r.projectLocalTools],
    ['project, unstreamed', r.projectUnstreamed],
  ];
  if (!aiSdk) return [];
  const o = r.options;
  const lines: string[] = [];
  for (const [name, figures] of modes) {
    for (const f of figures ?? []) {
      const a = aiSdk.find((x) => x.latencyMs === f.latencyMs);
      if (!a) continue;
      lines.push(
        `  ${name}, model ${f.latencyMs} ms: steps/s (${o.highConcurrency}) ${ratio(f.high.stepsPerSecond, a.high.stepsPerSecond)}, ` +
          `ms/step (${o.mediumConcurrency}) ${ratio(f.medium.msPerStep, a.medium.msPerStep)}, ` +
          `ms/step (1) ${ratio(f.single.msPerStep, a.single.msPerStep)}, ` +
          `worker CPU/step (${o.highConcurrency}) ${ratio(f.high.cpuPerStep?.worker, a.high.cpuPerStep?.worker)}`,
      );
    }
  }
  return lines.length > 0
    ? ['', 'The project against @temporalio/ai-sdk (value ÷ its value, same model latency):', ...lines]
    : [];
}
