// What a call reports beside its output (contract 0.2): results the host turns into Events
// on the object (Normal or Warning), conditions, and context values for the later steps of
// a mutation chain. None of them fails the call; throw a PluginError for that.
//
//   import { report } from '@syncweave/plugin';
//
//   report.warning('NamespaceMissing', `namespace ${ns} not found; labels not copied`);
//   report.normal('LabelsCopied', `copied ${n} labels from namespace ${ns}`);
//   report.condition('LabelsCopied', 'True', 'Copied', `${n} labels`);
//   report.setContext('tenant', tenant);          // ctx.values.tenant in later steps
//
// Reasons and condition types are CamelCase, and both are checked as Kubernetes and the host
// check them (the same rules as host/runtime/src/rules.rs), at the call that sets them. A
// context key that an earlier step set cannot be set again (each key has one owner). Works
// only during a call of a plugin that targets contract 0.2; testing.call returns the report
// and also applies the host's default bounds on a report's size (BOUNDS).
import { toJson } from './adapter.js';
import { currentCall } from './call.js';
import { ContractError } from './contract.js';
import { Severity } from './types.js';

const REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;
const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const CONTEXT_KEY = /^[A-Za-z0-9._/-]{1,253}$/;
export const STATUSES = Object.freeze(['True', 'False', 'Unknown']);
/** Longest condition message (bytes) the Kubernetes API accepts. */
export const MAX_CONDITION_MESSAGE = 32768;

/**
 * The host's default bounds on one call's report: all its strings together (bytes, the
 * context values as JSON text), and the number of results, conditions and context values.
 * The harness applies them; the host may be configured with others.
 */
export const BOUNDS = Object.freeze({ bytes: 65536, results: 32, conditions: 16, setContext: 32 });

const bytes = (s) => new TextEncoder().encode(s).length;

function reason(value, what, feature) {
  if (typeof value !== 'string' || value.length > 1024 || !REASON.test(value)) {
    throw new TypeError(
      `${feature}: ${what} ${JSON.stringify(value)} is not a valid reason; use CamelCase letters and digits (at most 1024, starting with a letter), such as 'NamespaceMissing', as Kubernetes Events and conditions require`,
    );
  }
  return value;
}

function conditionType(value, feature) {
  let ok = typeof value === 'string' && value.length > 0 && value.length <= 316;
  if (ok) {
    const i = value.lastIndexOf('/');
    const prefix = i < 0 ? '' : value.slice(0, i);
    ok = LABEL_NAME.test(value.slice(i + 1)) && (i < 0 || (prefix.length <= 253 && prefix.split('.').every((p) => DNS_LABEL.test(p))));
  }
  if (!ok) {
    throw new TypeError(
      `${feature}: type ${JSON.stringify(value)} is not a valid condition type; use CamelCase letters and digits (at most 63, optionally after a DNS prefix and '/'), such as 'SubnetResolved'`,
    );
  }
  return value;
}

function text(value, what, feature) {
  if (typeof value !== 'string') throw new TypeError(`${feature}: ${what} must be a string, not ${typeof value}`);
  return value;
}

function call(feature) {
  const c = currentCall(feature);
  if (c.plugin.world === 'projector') throw new ContractError(`${feature}: a projector cannot report (projection returns only the CRD)`);
  return c;
}

function result(severity, feature, why, message) {
  const c = call(feature);
  c.report.results.push({ severity, reason: reason(why, 'reason', feature), message: text(message, 'message', feature) });
}

/** Something worth telling the consumer: a Normal Event on the object. */
export const normal = (reason, message) => result(Severity.NORMAL, 'report.normal', reason, message);

/** Something is wrong or missing, but the output is usable: a Warning Event. */
export const warning = (reason, message) => result(Severity.WARNING, 'report.warning', reason, message);

/**
 * A condition on the object the call handled. `status` is 'True', 'False', 'Unknown' (or a
 * boolean). Reporting the same type again in one call replaces it.
 * @param {string} type
 * @param {'True'|'False'|'Unknown'|boolean} status
 * @param {string} why the reason
 * @param {string} [message]
 */
export function condition(type, status, why, message = '') {
  const feature = 'report.condition';
  const c = call(feature);
  const s = typeof status === 'boolean' ? (status ? 'True' : 'False') : status;
  if (!STATUSES.includes(s)) throw new TypeError(`${feature}: status ${JSON.stringify(status)} must be one of 'True', 'False', 'Unknown'`);
  const cond = { type: conditionType(type, feature), status: s, reason: reason(why, 'reason', feature), message: text(message, 'message', feature) };
  if (bytes(cond.message) > MAX_CONDITION_MESSAGE) throw new TypeError(`${feature}: message is ${bytes(cond.message)} bytes; Kubernetes accepts at most ${MAX_CONDITION_MESSAGE}`);
  const i = c.report.conditions.findIndex((x) => x.type === cond.type);
  if (i >= 0) c.report.conditions[i] = cond;
  else c.report.conditions.push(cond);
}

/**
 * Passes `value` (any JSON value) to the later steps of the mutation chain, which read it
 * as ctx.values[key]. Setting the same key again in one call replaces it; a key an earlier
 * step set is an error.
 * @param {string} key
 * @param {unknown} value
 */
export function setContext(key, value) {
  const feature = 'report.setContext';
  const c = call(feature);
  if (typeof key !== 'string' || !CONTEXT_KEY.test(key)) {
    throw new TypeError(
      `${feature}: key ${JSON.stringify(key)} is not a valid context key; use 1 to 253 letters, digits, '-', '_', '.' and '/' (e.g. 'example.com/subnet')`,
    );
  }
  if (Object.prototype.hasOwnProperty.call(c.values, key)) {
    throw new TypeError(
      `${feature}: context key '${key}' was set by an earlier step of the chain (ctx.values['${key}']); each key has one owner: read it, or choose another key`,
    );
  }
  toJson(value, `context value '${key}'`);
  c.report.setContext[key] = value;
}

/**
 * Throws, as the host fails the call, when `report` is over `bounds` (default BOUNDS).
 * @param {import('./types.js').Report} report
 * @param {Partial<typeof BOUNDS>} [bounds]
 */
export function checkBounds(report, bounds = {}) {
  const b = { ...BOUNDS, ...bounds };
  const setContext = Object.entries(report.setContext).map(([k, v]) => [k, toJson(v, `context value '${k}'`)]);
  const size =
    report.results.reduce((n, r) => n + bytes(r.reason) + bytes(r.message), 0) +
    report.conditions.reduce((n, c) => n + bytes(c.type) + bytes(c.status) + bytes(c.reason) + bytes(c.message), 0) +
    setContext.reduce((n, [k, v]) => n + bytes(k) + bytes(v), 0);
  if (size > b.bytes) {
    throw new RangeError(`the report is ${size} bytes, over the host's limit of ${b.bytes} bytes; report shorter messages or fewer results, conditions and context values`);
  }
  for (const [field, n] of [['results', report.results.length], ['conditions', report.conditions.length], ['setContext', setContext.length]]) {
    if (n > b[field]) throw new RangeError(`report.${field} has ${n} entries, over the host's limit of ${b[field]}`);
  }
}
