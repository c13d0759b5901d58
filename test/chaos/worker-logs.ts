/** Reads the worker processes' logs for warnings and errors, grouped by message. */
import fs from 'node:fs';

/** A warning or error message the workers logged, and how often. */
export interface LoggedMessage {
  level: 'warn' | 'error';
  message: string;
  count: number;
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;

/** Replaces ids, numbers and addresses so that the same message groups together. */
function normalize(text: string): string {
  return text
    .replace(/chaos-[a-z0-9]+-\d+(-m\d+)?/g, '<conversation>')
    .replace(/call_c\d+_\d+|call_[0-9a-f]{24}|functions\.[\w-]+:\d+/g, '<call>')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '<uuid>')
    .replace(/\d+(\.\d+)?/g, 'N')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 240);
}

/**
 * Warnings and errors in `files`, most frequent first. Understands the
 * worker's pino lines (JSON; the SDK's own go through them too, with the
 * activity type and error of an activity failure), the Temporal SDK's console lines
 * (`<time> [WARN] message { fields }`, with the activity type and error of
 * an activity failure) and Temporal core's lines (`<time> WARN target: message`).
 */
export function scanWorkerLogs(files: readonly string[]): LoggedMessage[] {
  const counts = new Map<string, LoggedMessage>();
  const add = (level: 'warn' | 'error', message: string): void => {
    const key = `${level}:${normalize(message)}`;
    const entry = counts.get(key) ?? { level, message: normalize(message), count: 0 };
    entry.count++;
    counts.set(key, entry);
  };
  for (const file of files) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8').replace(ANSI, '');
    } catch {
      continue;
    }
    const lines = text.split('\n');
    lines.forEach((line, i) => {
      if (line.startsWith('{')) {
        try {
          const entry = JSON.parse(line) as {
            level?: number;
            msg?: string;
            err?: { type?: string; message?: string };
            error?: string;
            activityType?: string;
          };
          if ((entry.level ?? 0) >= 40) {
            const detail = entry.err?.message
              ? `${entry.err.type ? `${entry.err.type}: ` : ''}${entry.err.message}`
              : entry.error;
            const activity = entry.activityType ? ` (${entry.activityType})` : '';
            add(entry.level! >= 50 ? 'error' : 'warn', `${entry.msg ?? ''}${activity}${detail ? `: ${detail}` : ''}`);
          }
        } catch {
          // not JSON after all
        }
        return;
      }
      const sdk = /^\S+ \[(WARN|ERROR)\] (.*?)( \{)?$/.exec(line);
      if (sdk) {
        let message = sdk[2];
        if (sdk[3]) {
          // The fields follow, one per line, until the closing brace.
          const block: string[] = [];
          for (let j = i + 1; j < lines.length && !lines[j].startsWith('}'); j++) block.push(lines[j]);
          const activity = block.map((l) => /^\s+activityType: '([^']+)'/.exec(l)?.[1]).find(Boolean);
          const error = block.map((l) => /^\s+error: (.*)$/.exec(l)?.[1]).find(Boolean);
          if (activity) message += ` (${activity})`;
          if (error) message += `: ${error}`;
        }
        add(sdk[1] === 'ERROR' ? 'error' : 'warn', message);
        return;
      }
      const core = /^\S+\s+(WARN|ERROR) (\S+): (.*)$/.exec(line);
      if (core) add(core[1] === 'ERROR' ? 'error' : 'warn', `${core[2]}: ${core[3].replace(/ error=.*$/, '')}`);
    });
  }
  return [...counts.values()].sort((a, b) => b.count - a.count);
}
