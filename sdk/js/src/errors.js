// Typed failures: one class per variant of the contract's `plugin-error`.
//
// Throw them from plugin code; the component adapter turns them into the WIT result and
// the host reports them with the plugin's name and digest. Anything else thrown is a bug
// in the plugin and is reported as `internal`, with where it was thrown.

/** Base class; `tag` is the WIT variant name. */
export class PluginError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = new.target.name;
  }

  /** @returns {'invalid-config'|'invalid-input'|'rejected'|'internal'} */
  get tag() {
    return 'internal';
  }
}

/** The plugin's config is unusable: the user must fix it. Name the field. */
export class InvalidConfig extends PluginError {
  get tag() {
    return 'invalid-config';
  }
}

/** The input object does not have the shape the plugin needs. */
export class InvalidInput extends PluginError {
  get tag() {
    return 'invalid-input';
  }
}

/** The plugin deliberately refuses this object (a policy decision). */
export class Rejected extends PluginError {
  get tag() {
    return 'rejected';
  }
}

/** A bug or unexpected condition inside the plugin. */
export class Internal extends PluginError {
  get tag() {
    return 'internal';
  }
}

/**
 * A read (contract 0.2, `reads`) that the host did not answer. `kind` is the WIT variant
 * of `read-error`; `detail` is the host's message, `read` the read that failed. Catch it
 * (or a subclass) to handle the failure; left uncaught, the call fails as `internal` with
 * the read and the host's message.
 */
export class ReadError extends PluginError {
  /**
   * @param {string} detail
   * @param {string} [read]
   */
  constructor(detail, read = '') {
    super(`${read ? `${read}: ` : ''}${new.target.kind}: ${detail}`);
    this.detail = detail;
    this.read = read;
  }

  /** @returns {'not-allowed'|'not-served'|'unavailable'|'invalid'} */
  get kind() {
    return /** @type {any} */ (this.constructor).kind;
  }

  static kind = 'read-error';
}

/** The read is not declared in the plugin's reads or not allowed by its WasmPlugin or PublishedResource. */
export class ReadNotAllowed extends ReadError {
  static kind = 'not-allowed';
}

/** The API server does not serve that resource. */
export class ReadNotServed extends ReadError {
  static kind = 'not-served';
}

/** The host could not read it now (its cache is not synced, the server does not answer); the call may be retried. */
export class ReadUnavailable extends ReadError {
  static kind = 'unavailable';
}

/** The request itself is malformed (e.g. a bad label selector). */
export class ReadInvalid extends ReadError {
  static kind = 'invalid';
}

/** The error class for each `read-error` variant name. */
export const READ_ERRORS = Object.freeze(
  Object.fromEntries([ReadNotAllowed, ReadNotServed, ReadUnavailable, ReadInvalid].map((cls) => [cls.kind, cls])),
);

/**
 * The error class for a WIT variant name.
 * @param {string} tag
 * @param {string} message
 */
export function fromTag(tag, message) {
  const cls = { 'invalid-config': InvalidConfig, 'invalid-input': InvalidInput, rejected: Rejected, internal: Internal }[tag];
  if (!cls) throw new TypeError(`unknown plugin-error variant '${tag}'`);
  return new cls(message);
}
