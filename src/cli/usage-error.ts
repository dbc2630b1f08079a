/** A command line the CLI refuses; `main` prints the message and exits with code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * The {@link UsageError} of an error `util.parseArgs` threw, in the CLI's words and on one line (Node's own
 * messages span lines, which the CLI's sanitiser would show as a literal `\n`):
 * - an unknown option: `unknown option --foo (a task that starts with - goes after --: loopctl -- "--foo")`;
 * - a string option with no value: `option --model needs a value`;
 * - one followed by an option (`--model --json`): `option --model needs a value, not the option after it
 *   (a value that starts with - is written --model=-x)`;
 * - a value given to a boolean option: `option --json takes no value`.
 * Any other message: its lines joined with spaces.
 */
export function parseArgsError(error: unknown): UsageError {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  const unknown = /^Unknown option '([^']+)'/.exec(message);
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && unknown)
    return new UsageError(
      `unknown option ${unknown[1]} (a task that starts with - goes after --: ` +
        `loopctl -- ${JSON.stringify(unknown[1])})`,
    );
  // "Option '-m, --model <value>' …": the long name is the one the help lists.
  const option = /^Option '(?:-\w, )?(-{1,2}[\w-]+)/.exec(message)?.[1];
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && option) {
    if (/argument is ambiguous/.test(message))
      return new UsageError(
        `option ${option} needs a value, not the option after it (a value that starts with - is written ` +
          `${option}=-x)`,
      );
    if (/argument missing/.test(message)) return new UsageError(`option ${option} needs a value`);
    if (/does not take an argument/.test(message)) return new UsageError(`option ${option} takes no value`);
  }
  return new UsageError(message.split('\n').join(' '));
}
