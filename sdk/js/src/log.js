// Log lines from a plugin into the host's structured logs.
//
// Inside a component, lines go to the host through the contract's `host-log` import (the
// host tags them with the plugin's name and bounds their volume). Outside one (unit
// tests, the local harness) there is no host: lines are printed to stderr and kept, see
// takeCaptured().

export const LEVELS = Object.freeze(['trace', 'debug', 'info', 'warn', 'error']);

/** @type {((level: string, message: string) => void) | null} */
let sink = null;
/** @type {Array<[string, string]>} */
let captured = [];

/**
 * Routes lines to `fn(level, message)`; the component adapter installs the host's
 * `host-log` import here. `null` restores stderr and capture.
 * @param {((level: string, message: string) => void) | null} fn
 */
export function installSink(fn) {
  sink = fn;
}

/**
 * Sends one line at `level` (trace, debug, info, warn or error).
 * @param {string} level
 * @param {unknown} message
 */
export function log(level, message) {
  if (!LEVELS.includes(level)) throw new TypeError(`unknown log level '${level}' (expected one of ${LEVELS.join(', ')})`);
  const text = String(message);
  if (sink) {
    sink(level, text);
    return;
  }
  captured.push([level, text]);
  if (typeof console !== 'undefined') console.error(`[plugin ${level}] ${text}`);
}

export const trace = (m) => log('trace', m);
export const debug = (m) => log('debug', m);
export const info = (m) => log('info', m);
export const warn = (m) => log('warn', m);
export const error = (m) => log('error', m);

/** The [level, message] lines logged outside a component since the last call. */
export function takeCaptured() {
  const out = captured;
  captured = [];
  return out;
}
