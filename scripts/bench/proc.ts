/**
 * Reading Linux `/proc`: CPU time and memory of a process, the machine's CPU
 * counters, and finding processes by command line. Everything here is
 * synchronous and cheap (a few small file reads).
 */
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';

/** Clock ticks per second of `/proc/<pid>/stat` times (`getconf CLK_TCK`, 100 on Linux). */
export const CLOCK_TICKS: number = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** Fields of `/proc/<pid>/stat` after the command name (field 3 onwards, so index 0 is the state). */
function statFields(pid: number): string[] | undefined {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may itself contain spaces or parentheses.
    return text
      .slice(text.lastIndexOf(')') + 2)
      .trim()
      .split(/\s+/);
  } catch {
    return undefined;
  }
}

/** CPU time (user + system) a process has used so far, in milliseconds; undefined when it is gone. */
export function processCpuMs(pid: number, withReapedChildren = false): number | undefined {
  const f = statFields(pid);
  if (!f) return undefined;
  // After the name: state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17) → indexes 11..14.
  const ticks = Number(f[11]) + Number(f[12]) + (withReapedChildren ? Number(f[13]) + Number(f[14]) : 0);
  return (ticks * 1000) / CLOCK_TICKS;
}

/** Parent pid of a process; undefined when it is gone. */
export function parentPid(pid: number): number | undefined {
  const f = statFields(pid);
  return f ? Number(f[1]) : undefined;
}

/** Every pid in `/proc`. */
export function allPids(): number[] {
  return fs
    .readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
}

/** The command line of a process as its arguments; undefined when it is gone. */
export function commandLine(pid: number): string[] | undefined {
  try {
    const raw = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    const args = raw.split('\0');
    if (args[args.length - 1] === '') args.pop();
    return args;
  } catch {
    return undefined;
  }
}

/** Pids whose argument list satisfies `match`. */
export function findProcesses(match: (args: string[]) => boolean): number[] {
  return allPids().filter((pid) => {
    const args = commandLine(pid);
    return args !== undefined && args.length > 0 && match(args);
  });
}

/** Resident memory of a process (`VmRSS`) and its peak (`VmHWM`), in MiB; undefined when it is gone. */
export function processMemoryMiB(pid: number): { rssMiB: number; peakMiB: number } | undefined {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+)\\s+kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rssMiB: kib('VmRSS') / 1024, peakMiB: kib('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

/** The machine's CPU time so far, all cores, in ms, by kind (`/proc/stat`). */
export interface MachineTimes {
  /** Running processes: user, nice and system time. */
  processes: number;
  /** Serving interrupts (irq, softirq: e.g. loopback network traffic), counted to no process. */
  interrupts: number;
  /** Taken by the hypervisor for other guests while this one had work: a busy host, invisible otherwise. */
  steal: number;
  /** Idle while some process waited for the disk. */
  iowait: number;
}

/** The machine's CPU time so far, by kind. */
export function machineTimes(): MachineTimes {
  const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0];
  // user nice system idle iowait irq softirq steal guest guest_nice; guest time is already in user.
  const v = line
    .trim()
    .split(/\s+/)
    .slice(1)
    .map((n) => (Number(n) * 1000) / CLOCK_TICKS);
  return { processes: v[0] + v[1] + v[2], interrupts: v[5] + v[6], steal: v[7] ?? 0, iowait: v[4] };
}

/**
 * CPU time of a PostgreSQL server: the postmaster (with the backends it
 * reaped) plus every live child process, in milliseconds.
 */
export function postgresCpuMs(postmasterPid: number): number {
  let total = processCpuMs(postmasterPid, true) ?? 0;
  for (const pid of allPids()) {
    if (pid !== postmasterPid && parentPid(pid) === postmasterPid) total += processCpuMs(pid) ?? 0;
  }
  return total;
}

/** The postmaster's pid, from the first line of `<dataDir>/postmaster.pid`. */
export function postmasterPid(dataDir: string): number | undefined {
  try {
    const pid = Number(fs.readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
    return pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** One process in a {@link processTable}. */
export interface ProcessEntry {
  ppid: number;
  /** user + system CPU time so far, ms. */
  cpuMs: number;
  /** The same plus that of its reaped children, ms. */
  cpuWithChildrenMs: number;
  /** Command name (`/proc/<pid>/stat` field 2). */
  name: string;
}

/** Every process of the machine with its CPU time, read from `/proc/<pid>/stat`. */
export function processTable(): Map<number, ProcessEntry> {
  const table = new Map<number, ProcessEntry>();
  for (const pid of allPids()) {
    try {
      const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const name = text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'));
      const f = text
        .slice(text.lastIndexOf(')') + 2)
        .trim()
        .split(/\s+/);
      const own = ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS;
      const children = ((Number(f[13]) + Number(f[14])) * 1000) / CLOCK_TICKS;
      table.set(pid, { ppid: Number(f[1]), cpuMs: own, cpuWithChildrenMs: own + children, name });
    } catch {
      // gone meanwhile
    }
  }
  return table;
}

/** `root` and every process below it in `table`. */
export function descendants(table: Map<number, ProcessEntry>, root: number): Set<number> {
  const children = new Map<number, number[]>();
  for (const [pid, p] of table) children.set(p.ppid, [...(children.get(p.ppid) ?? []), pid]);
  const found = new Set<number>([root]);
  const stack = [root];
  while (stack.length > 0) {
    for (const child of children.get(stack.pop()!) ?? []) {
      if (!found.has(child)) {
        found.add(child);
        stack.push(child);
      }
    }
  }
  return found;
}
