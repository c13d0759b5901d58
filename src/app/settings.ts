/**
 * How one setting is declared, and what is derived from a table of them.
 *
 * A setting names its environment variable, the parser that reads it (with
 * the message a bad value gets), its default and one line of doc. A group
 * is one setting made of several variables (OIDC, traces, Temporal's
 * connection). The configuration table (`config.ts`) is a tree of these
 * whose keys are the configuration's field names; from it come the schema
 * the environment is checked against, the configuration's type
 * ({@link ConfigOf}), its values ({@link readSettings}) and the list of
 * variables the configuration page must document ({@link variablesOf}).
 */
import { z } from 'zod';
import { ConfigError } from '../common/errors';

/** A variable holding text: trimmed, and unset when blank (as docker-compose passes an unset `${VAR:-}`). */
export const text = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

/** A variable holding a whole number: `notWhole` when it is not one, then `range`'s checks. */
export const wholeNumber = (notWhole: string, range: z.ZodNumber) =>
  text.pipe(z.string().regex(/^\d+$/, notWhole).transform(Number).pipe(range).optional());

/** A yes/no variable. */
export const yesNo = text.pipe(
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'], { error: 'must be true or false' })
    .transform((v) => v === 'true' || v === '1' || v === 'yes')
    .optional(),
);

/** A variable holding JSON: `notJson` when it does not parse, else what `describeProblem` finds wrong with it. */
export function jsonVariable<T>(notJson: string, describeProblem: (value: unknown) => string | undefined) {
  return text.pipe(
    z
      .string()
      .transform((json, ctx) => {
        let value: unknown;
        try {
          value = JSON.parse(json);
        } catch {
          ctx.addIssue({ code: 'custom', message: notJson });
          return z.NEVER;
        }
        const problem = describeProblem(value);
        if (problem) {
          ctx.addIssue({ code: 'custom', message: problem });
          return z.NEVER;
        }
        return value as T;
      })
      .optional(),
  );
}

/**
 * A variable `parse` reads; what it throws (a message for the person starting
 * the worker, reworded by `messageOf` when given) is reported as a bad value.
 */
export function parsedBy<T>(
  parse: (value: string) => T,
  messageOf: (message: string) => string = (message) => message,
) {
  return text.transform((value, ctx) => {
    if (value === undefined) return undefined;
    try {
      return parse(value);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: messageOf((err as Error).message) });
      return z.NEVER;
    }
  });
}

/** A variable `describeProblem` checks: undefined when the text is fine, else what is wrong with it. */
export function checkedBy(describeProblem: (value: string) => string | undefined) {
  return text.superRefine((value, ctx) => {
    const problem = value === undefined ? undefined : describeProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });
}

/** What a setting's default or value may depend on besides its own variables. */
export interface SettingContext {
  /** The environment being read. */
  readonly env: NodeJS.ProcessEnv;
  /** The value of another setting of the table, resolved once per read of the environment. */
  readonly read: <T>(setting: Setting<T>) => T;
}

/** The environment as the schema parsed it: each variable's value, or undefined when unset. */
type ParsedEnvironment = Readonly<Record<string, unknown>>;

/** How a setting is read; assembled by {@link setting} and {@link group}. */
interface SettingParts<T> {
  /** Each variable the setting parses itself, with its parser. */
  readonly parsers: Readonly<Record<string, z.ZodType>>;
  /** A group's members, each a setting of one variable. */
  readonly members: readonly Setting<unknown>[];
  /** Variables another library reads itself (`@temporalio/envconfig`, OpenTelemetry), listed for the docs. */
  readonly passedThrough: readonly string[];
  readonly doc: string;
  /** The default when it is a plain value, as the configuration page shows it. */
  readonly plainDefault?: string | number | boolean;
  /** False for the variables a deployment need not set (see {@link deploymentVariables}). */
  readonly deployment: boolean;
  resolve(parsed: ParsedEnvironment, context: SettingContext): T;
  /** Checks across variables, reported like a bad value of one of them. */
  refine?(parsed: ParsedEnvironment, issues: z.RefinementCtx): void;
  /** Checks across settings, once every variable parsed: the error message, or undefined. */
  check?(value: T, context: SettingContext): string | undefined;
}

/** One entry of the configuration table; `T` is the setting's value in the configuration. */
export class Setting<T> {
  /** Use {@link setting} or {@link group}. */
  constructor(readonly parts: SettingParts<T>) {}
}

/** What a variable's parser gives for a set variable. */
type Parsed<P extends z.ZodType> = Exclude<z.output<P>, undefined>;

/** The fields every setting of one variable declares. */
interface OneVariable<P extends z.ZodType> {
  /** The environment variable. */
  variable: string;
  /**
   * Its parser: unset (or blank) gives undefined, a bad value an issue with the message the person starting the worker
   * reads.
   */
  parse: P;
  /** One line: what the setting does. */
  doc: string;
  /** False when a deployment need not set it: the embedded dev server's, logging and OpenTelemetry's variables. */
  deployment?: false;
}

/** A setting with a default: a value, or one computed from other settings. */
interface WithDefault<P extends z.ZodType> extends OneVariable<P> {
  default: Parsed<P> | ((context: SettingContext) => Parsed<P>);
  /** A rule across settings: the message of a configuration the worker refuses, or undefined. */
  check?: (value: Parsed<P>, context: SettingContext) => string | undefined;
}

/** A setting whose value is made from its variable's (or from other settings, such as Temporal's connection). */
interface WithResolve<P extends z.ZodType, R> extends OneVariable<P> {
  resolve: (value: Parsed<P> | undefined, context: SettingContext) => R;
}

/** A setting of one variable with a default: its value is the parsed variable, else the default. */
export function setting<P extends z.ZodType>(spec: WithDefault<P>): Setting<Parsed<P>>;
/** A setting of one variable whose value `resolve` makes from the parsed variable (undefined when unset). */
export function setting<P extends z.ZodType, R>(spec: WithResolve<P, R>): Setting<R>;
/** A setting of one variable with no default: unset stays undefined. */
export function setting<P extends z.ZodType>(spec: OneVariable<P>): Setting<Parsed<P> | undefined>;
export function setting<P extends z.ZodType>(
  spec: OneVariable<P> & Partial<WithDefault<P> & WithResolve<P, unknown>>,
): Setting<unknown> {
  const { variable, parse, doc, deployment } = spec;
  const fallback = spec.default;
  const check = spec.check;
  return new Setting<unknown>({
    parsers: { [variable]: parse },
    members: [],
    passedThrough: [],
    doc,
    deployment: deployment ?? true,
    ...(isPlain(fallback) ? { plainDefault: fallback } : {}),
    resolve(parsed, context) {
      const value = parsed[variable] as Parsed<P> | undefined;
      if (spec.resolve) return spec.resolve(value, context);
      if (value !== undefined || fallback === undefined) return value;
      return typeof fallback === 'function' ? (fallback as (context: SettingContext) => Parsed<P>)(context) : fallback;
    },
    ...(check ? { check: (value: unknown, context: SettingContext) => check(value as Parsed<P>, context) } : {}),
  });
}

function isPlain(value: unknown): value is string | number | boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/** The values of a group's members. */
type MemberValues<M> = { [K in keyof M]: M[K] extends Setting<infer T> ? T : never };

/** A setting made of several variables, built by a function of its own. */
interface GroupSpec<M extends Record<string, Setting<unknown>>, T> {
  /** The settings it is made of, each of one variable; they are not fields of the configuration themselves. */
  members?: M;
  /** Variables another library reads itself: declared here so the configuration page lists them. */
  passedThrough?: readonly string[];
  /** One line: what the group sets. */
  doc: string;
  /** Checks across the members' variables (as parsed, before defaults); `refuse` reports a bad value of one member. */
  refine?: (values: Partial<MemberValues<M>>, refuse: (member: keyof M & string, message: string) => void) => void;
  /** The group's value, from its members' values. */
  build: (values: MemberValues<M>, context: SettingContext) => T;
}

/** A setting of several variables (its members and the variables another library reads), built by `build`. */
export function group<T, M extends Record<string, Setting<unknown>> = Record<never, never>>(
  spec: GroupSpec<M, T>,
): Setting<T> {
  const members = (spec.members ?? {}) as M;
  const entries = Object.entries(members);
  for (const [key, member] of entries) {
    if (Object.keys(member.parts.parsers).length !== 1 || member.parts.members.length > 0)
      throw new Error(`group member ${key} must be a setting of one variable`);
  }
  const variableOf = (key: string): string => Object.keys(members[key].parts.parsers)[0];
  const refine = spec.refine;
  return new Setting<T>({
    parsers: {},
    members: entries.map(([, member]) => member),
    passedThrough: spec.passedThrough ?? [],
    doc: spec.doc,
    // A group has no variable of its own: its members say whether a deployment sets theirs.
    deployment: false,
    resolve(_parsed, context) {
      const values = Object.fromEntries(entries.map(([key, member]) => [key, context.read(member)]));
      return spec.build(values as MemberValues<M>, context);
    },
    ...(refine
      ? {
          refine(parsed: ParsedEnvironment, issues: z.RefinementCtx) {
            const values = Object.fromEntries(entries.map(([key]) => [key, parsed[variableOf(key)]]));
            refine(values as Partial<MemberValues<M>>, (member, message) =>
              issues.addIssue({ code: 'custom', path: [variableOf(member)], message }),
            );
          },
        }
      : {}),
  });
}

/** The configuration table: settings by field name, and sections of them. */
export interface SettingsTable {
  readonly [field: string]: Setting<unknown> | SettingsTable;
}

/** Flattens an intersection for readable hovers and messages. */
type Simplify<T> = { [K in keyof T]: T[K] } & {};

type ValueOf<E> = E extends Setting<infer T> ? T : E extends SettingsTable ? ConfigOf<E> : never;
type UnsetKeys<S> = { [K in keyof S]: undefined extends ValueOf<S[K]> ? K : never }[keyof S];

/**
 * The configuration a table describes: each setting's value under its field
 * name, a setting that may be unset as an optional field (undefined when unset).
 */
export type ConfigOf<S extends SettingsTable> = Simplify<
  { [K in Exclude<keyof S, UnsetKeys<S>>]: ValueOf<S[K]> } & { [K in UnsetKeys<S>]?: Exclude<ValueOf<S[K]>, undefined> }
>;

/** Every setting of the table, depth first in the table's order, with their members after them. */
function settingsOf(table: SettingsTable): Setting<unknown>[] {
  return Object.values(table).flatMap((entry) =>
    entry instanceof Setting ? [entry, ...entry.parts.members] : settingsOf(entry),
  );
}

const schemas = new WeakMap<SettingsTable, z.ZodType<ParsedEnvironment>>();

/** The schema the environment is checked against: every parsed variable, and the checks across variables. */
function schemaOf(table: SettingsTable): z.ZodType<ParsedEnvironment> {
  let schema = schemas.get(table);
  if (!schema) {
    const settings = settingsOf(table);
    const shape = Object.assign({}, ...settings.map((s) => s.parts.parsers)) as Record<string, z.ZodType>;
    schema = z.object(shape).superRefine((parsed, issues) => {
      for (const s of settings) s.parts.refine?.(parsed, issues);
    });
    schemas.set(table, schema);
  }
  return schema;
}

/** The table's values under its field names (an unset setting's field holds undefined). */
function valuesOf(table: SettingsTable, context: SettingContext): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(table).map(([field, entry]) => [
      field,
      entry instanceof Setting ? context.read(entry) : valuesOf(entry, context),
    ]),
  );
}

/**
 * Reads the configuration a table describes from `env`. A bad value throws
 * a {@link ConfigError} listing every bad variable and what it expects; then
 * the checks across settings run, then the values are resolved.
 */
export function readSettings<S extends SettingsTable>(table: S, env: NodeJS.ProcessEnv): ConfigOf<S> {
  const result = schemaOf(table).safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration in the environment:\n${lines.join('\n')}`);
  }
  const parsed = result.data;
  const resolved = new Map<Setting<unknown>, unknown>();
  const context: SettingContext = {
    env,
    read: <T>(s: Setting<T>): T => {
      if (!resolved.has(s)) resolved.set(s, s.parts.resolve(parsed, context));
      return resolved.get(s) as T;
    },
  };
  for (const s of settingsOf(table)) {
    const problem = s.parts.check?.(context.read(s), context);
    if (problem) throw new ConfigError(problem);
  }
  return valuesOf(table, context) as ConfigOf<S>;
}

/** One environment variable as the table declares it, for the configuration page. */
export interface DeclaredVariable {
  variable: string;
  /** The line of doc of its setting (of its group, for a variable another library reads). */
  doc: string;
  /** Its default, when a plain value. */
  default?: string | number | boolean;
  /** False when another library reads it (the configuration only lists it). */
  parsed: boolean;
  /** False when a deployment need not set it. */
  deployment: boolean;
}

/** Every variable the table declares, in the table's order. */
export function variablesOf(table: SettingsTable): DeclaredVariable[] {
  return settingsOf(table).flatMap((s) => [
    ...Object.keys(s.parts.parsers).map((variable) => ({
      variable,
      doc: s.parts.doc,
      ...(s.parts.plainDefault !== undefined ? { default: s.parts.plainDefault } : {}),
      parsed: true,
      deployment: s.parts.deployment,
    })),
    ...s.parts.passedThrough.map((variable) => ({ variable, doc: s.parts.doc, parsed: false, deployment: false })),
  ]);
}

/**
 * The variables a deployment sets (docker-compose.yml's worker lists each): every parsed one not marked `deployment:
 * false`.
 */
export function deploymentVariables(table: SettingsTable): string[] {
  return variablesOf(table)
    .filter((v) => v.parsed && v.deployment)
    .map((v) => v.variable);
}
