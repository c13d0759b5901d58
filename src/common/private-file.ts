/**
 * Reading secrets from files that only their owner may read: a token or key
 * file others can read is refused, since whoever reads it can act as anyone
 * it names.
 */
import fs from 'node:fs';
import { ConfigError } from './errors';

/**
 * The text of `file`, refused with a `ConfigError` when it is missing or others may read it; `what` names it in errors
 * ("The API token file").
 */
export function readPrivateFile(file: string, what: string): string {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    throw new ConfigError(`${what} ${file} does not exist.`);
  }
  if ((stat.mode & 0o077) !== 0) {
    throw new ConfigError(
      `${what} ${file} can be read by others (mode ${(stat.mode & 0o777).toString(8)}): run \`chmod 600 ${file}\`.`,
    );
  }
  return fs.readFileSync(file, 'utf8');
}
