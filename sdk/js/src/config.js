// Checking configs field by field. Every helper throws InvalidConfig with a message that
// names the field, so a user reading the host's error knows what to fix.
import { InvalidConfig } from './errors.js';

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * `value` must be an object with every `required` key and no key outside `required` and
 * `optional` (typos should not pass silently). Returns it.
 * @param {unknown} value
 * @param {string} where
 * @param {{required?: string[], optional?: string[]}} [keys]
 * @returns {Record<string, any>}
 */
export function fields(value, where, { required = [], optional = [] } = {}) {
  if (!isObject(value)) throw new InvalidConfig(`${where} must be an object`);
  for (const key of Object.keys(value)) {
    if (!required.includes(key) && !optional.includes(key)) throw new InvalidConfig(`${where}: unknown field '${key}'`);
  }
  for (const key of required) {
    if (!(key in value)) throw new InvalidConfig(`${where}: missing field '${key}'`);
  }
  return /** @type {Record<string, any>} */ (value);
}

/**
 * @param {unknown} value
 * @param {string} where
 * @param {{allowEmpty?: boolean}} [opts]
 * @returns {string}
 */
export function string(value, where, { allowEmpty = true } = {}) {
  if (typeof value !== 'string') throw new InvalidConfig(`${where} must be a string`);
  if (!allowEmpty && value === '') throw new InvalidConfig(`${where} must not be empty`);
  return value;
}

/** @returns {boolean} */
export function boolean(value, where) {
  if (typeof value !== 'boolean') throw new InvalidConfig(`${where} must be true or false`);
  return value;
}

/**
 * @param {unknown} value
 * @param {string} where
 * @param {{minimum?: number, maximum?: number}} [opts]
 * @returns {number}
 */
export function integer(value, where, { minimum, maximum } = {}) {
  if (typeof value !== 'number' || !Number.isInteger(value)) throw new InvalidConfig(`${where} must be an integer`);
  if (minimum !== undefined && value < minimum) throw new InvalidConfig(`${where} must be at least ${minimum}`);
  if (maximum !== undefined && value > maximum) throw new InvalidConfig(`${where} must be at most ${maximum}`);
  return value;
}

/** An object whose values are all strings (labels, annotations). @returns {Record<string, string>} */
export function stringMap(value, where) {
  if (!isObject(value)) throw new InvalidConfig(`${where} must be an object of strings`);
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string') throw new InvalidConfig(`${where}.${k} must be a string`);
  }
  return /** @type {Record<string, string>} */ (value);
}

/** @returns {string[]} */
export function stringList(value, where) {
  if (!Array.isArray(value)) throw new InvalidConfig(`${where} must be a list of strings`);
  value.forEach((v, i) => {
    if (typeof v !== 'string') throw new InvalidConfig(`${where}[${i}] must be a string`);
  });
  return value;
}
