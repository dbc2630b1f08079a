/** The BullMQ queue `loopctl serve --queue` and `loopctl worker --queue` share on their Redis by default. */
export const CLI_QUEUE = 'cli';

/**
 * The queue name of a `--queue` URL: its `queue` query parameter (`redis://host:6379/0?queue=team-a`), else
 * {@link CLI_QUEUE}. The rest of the URL is the Redis connection.
 */
export function cliQueueName(url: string): string {
  try {
    return new URL(url).searchParams.get('queue') || CLI_QUEUE;
  } catch {
    return CLI_QUEUE;
  }
}
