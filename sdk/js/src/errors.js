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
 * The error class for a WIT variant name.
 * @param {string} tag
 * @param {string} message
 */
export function fromTag(tag, message) {
  const cls = { 'invalid-config': InvalidConfig, 'invalid-input': InvalidInput, rejected: Rejected, internal: Internal }[tag];
  if (!cls) throw new TypeError(`unknown plugin-error variant '${tag}'`);
  return new cls(message);
}
