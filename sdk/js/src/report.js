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
// Reasons and condition types are CamelCase, as Kubernetes wants them. A context key that
// an earlier step set cannot be set again (each key has one owner). Works only during a
// call of a plugin that targets contract 0.2; testing.call returns the report.
import { toJson } from './adapter.js';
import { currentCall } from './call.js';
import { ContractError } from './contract.js';
import { Severity } from './types.js';

const CAMEL = /^[A-Z][A-Za-z0-9]*$/;
export const STATUSES = Object.freeze(['True', 'False', 'Unknown']);

function camel(value, what, feature) {
  if (typeof value !== 'string' || !CAMEL.test(value)) {
    throw new TypeError(
      `${feature}: ${what} ${JSON.stringify(value)} must be CamelCase (letters and digits, starting with a capital, e.g. 'NamespaceMissing'), as Kubernetes Events and conditions require`,
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

function result(severity, feature, reason, message) {
  const c = call(feature);
  c.report.results.push({ severity, reason: camel(reason, 'reason', feature), message: text(message, 'message', feature) });
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
 * @param {string} reason
 * @param {string} [message]
 */
export function condition(type, status, reason, message = '') {
  const feature = 'report.condition';
  const c = call(feature);
  const s = typeof status === 'boolean' ? (status ? 'True' : 'False') : status;
  if (!STATUSES.includes(s)) throw new TypeError(`${feature}: status ${JSON.stringify(status)} must be one of 'True', 'False', 'Unknown'`);
  const cond = { type: camel(type, 'type', feature), status: s, reason: camel(reason, 'reason', feature), message: text(message, 'message', feature) };
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
  if (typeof key !== 'string' || key === '') throw new TypeError(`${feature}: key must be a non-empty string, not ${JSON.stringify(key)}`);
  if (Object.prototype.hasOwnProperty.call(c.values, key)) {
    throw new TypeError(
      `${feature}: context key '${key}' was set by an earlier step of the chain (ctx.values['${key}']); each key has one owner: read it, or choose another key`,
    );
  }
  toJson(value, `context value '${key}'`);
  c.report.setContext[key] = value;
}
