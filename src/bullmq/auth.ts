import { createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalJson, keyBytes } from '../control/seal.js';
import { ConfigurationError, LoopctlError } from '../errors.js';

/**
 * The key `queueRuns` and `startWorker` share (docs/scale-out.md, "Trust boundary"): a string (its UTF-8
 * bytes) or bytes (`Uint8Array`, a `Buffer`), at least {@link MIN_QUEUE_SECRET_BYTES} bytes. Every job payload,
 * control command, answer and steering item the processes exchange through Redis carries an HMAC-SHA256 tag
 * under it. Never logged, never stored in Redis.
 */
export type QueueSecret = string | Uint8Array;

/** The least secret length in bytes (HMAC-SHA256's output size). */
export const MIN_QUEUE_SECRET_BYTES = 32;

/**
 * Why a worker refused a job or a command (docs/scale-out.md, "Trust boundary"): `unsigned` (no tag),
 * `mis_signed` (a tag that does not match under this worker's `secret`: another key, or any field changed —
 * the run, the thread, the input, the command, its id), `thread_mismatch` (the run's state in Redis names
 * another thread than the job's signed payload), `replayed` (a command id this run already applied). A
 * refused job fails (BullMQ's `failedReason` is this error's message) and no run starts; a refused command
 * is answered with this error as its refusal (`name` `QueueAuthError`, `code`) and changes nothing.
 */
export class QueueAuthError extends LoopctlError {
  override readonly name: string = 'QueueAuthError';
  constructor(
    readonly code: QueueAuthErrorCode,
    message: string,
  ) {
    super(`${code}: ${message}`);
  }
}

/** See {@link QueueAuthError}. */
export type QueueAuthErrorCode = 'unsigned' | 'mis_signed' | 'thread_mismatch' | 'replayed';

/**
 * The signing side of one process: tags (`sign`) and checks (`verify`) the canonical JSON of `parts` (keys
 * sorted) with HMAC-SHA256 under the shared secret; tags are base64url. `insecure` (no secret, only with
 * `insecure: true`): `sign` answers `''` and `verify` accepts anything.
 */
export class QueueAuth {
  readonly #key: Buffer | undefined;

  private constructor(key: Buffer | undefined) {
    this.#key = key;
  }

  /**
   * The auth of a `queueRuns` / `startWorker` options object.
   * @throws {ConfigurationError} `options.secret` missing (without `insecure: true`), not a string or bytes, or
   * shorter than 32 bytes; `options.insecure` not a boolean, or `true` beside a secret.
   */
  static of(options: { readonly secret?: unknown; readonly insecure?: unknown }): QueueAuth {
    const { secret, insecure } = options;
    if (insecure !== undefined && typeof insecure !== 'boolean') {
      throw new ConfigurationError('options.insecure', 'must be true or false');
    }
    const rule = `must be a string or a Uint8Array of at least ${MIN_QUEUE_SECRET_BYTES} bytes`;
    if (secret === undefined) {
      if (insecure === true) return new QueueAuth(undefined);
      throw new ConfigurationError(
        'options.secret',
        `is required: ${rule}, the same for queueRuns and every worker ` +
          '(e.g. `openssl rand -hex 32`); pass insecure: true to run without one (anyone who can write to Redis ' +
          'then controls the runs)',
      );
    }
    if (insecure === true) throw new ConfigurationError('options.insecure', 'cannot be true when a secret is given');
    if (typeof secret !== 'string' && !(secret instanceof Uint8Array)) {
      throw new ConfigurationError('options.secret', rule);
    }
    const bytes = keyBytes(secret);
    if (bytes < MIN_QUEUE_SECRET_BYTES) throw new ConfigurationError('options.secret', `${rule} (got ${bytes})`);
    return new QueueAuth(typeof secret === 'string' ? Buffer.from(secret, 'utf8') : Buffer.from(secret));
  }

  /** True without a secret (`insecure: true`). */
  get insecure(): boolean {
    return this.#key === undefined;
  }

  /**
   * A key of its own for `purpose` (HMAC-SHA256 of the purpose under the secret, 32 bytes), so one secret never
   * signs two kinds of thing with the same key. Insecure: a fixed, public key (anyone can sign with it).
   */
  derive(purpose: string): Buffer {
    const key = this.#key ?? Buffer.from('loopctl insecure queue: no secret', 'utf8');
    return createHmac('sha256', key).update(`loopctl derived key: ${purpose}`).digest();
  }

  /** The tag of `parts` (`''` when insecure). */
  sign(parts: unknown): string {
    if (this.#key === undefined) return '';
    return createHmac('sha256', this.#key).update(canonicalJson(parts)).digest('base64url');
  }

  /**
   * Checks `mac` against `parts` in constant time: `undefined` when it matches (or when insecure), else the
   * {@link QueueAuthError} code: `unsigned` (no tag), `mis_signed`.
   */
  verify(parts: unknown, mac: unknown): 'unsigned' | 'mis_signed' | undefined {
    if (this.#key === undefined) return undefined;
    if (typeof mac !== 'string' || mac === '') return 'unsigned';
    const expected = Buffer.from(this.sign(parts), 'utf8');
    const given = Buffer.from(mac, 'utf8');
    return given.length === expected.length && timingSafeEqual(given, expected) ? undefined : 'mis_signed';
  }
}
