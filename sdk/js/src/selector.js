// Kubernetes label selectors (`app=db,tier!=cache,env in (a,b),!legacy`): parsing and
// matching, for the harness's read fixtures. The host evaluates selectors itself; this is
// the same syntax, so a selector that works in a test works against a cluster.

const NAME = '[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?';
const PREFIX = '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*';
const KEY = new RegExp(`^(${PREFIX}/)?${NAME}$`);
const VALUE = new RegExp(`^(${NAME})?$`);

const EXISTS = /^\s*(?<not>!)?\s*(?<key>[^\s!=<>(),]+)\s*$/;
const EQUALITY = /^\s*(?<key>[^\s!=<>(),]+)\s*(?<op>==|=|!=)\s*(?<value>[^\s!=<>(),]*)\s*$/;
const SET = /^\s*(?<key>[^\s!=<>(),]+)\s+(?<op>in|notin)\s*\((?<values>[^()]*)\)\s*$/;
const ORDER = /^\s*(?<key>[^\s!=<>(),]+)\s*(?<op>[<>])\s*(?<value>-?[0-9]+)\s*$/;

/** A selector that does not parse; the message quotes the bad requirement. */
export class SelectorError extends Error {
  constructor(message) {
    super(message);
    this.name = 'SelectorError';
  }
}

function split(selector) {
  const parts = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < selector.length; i++) {
    const ch = selector[i];
    if (ch === '(') depth++;
    else if (ch === ')') {
      depth--;
      if (depth < 0) throw new SelectorError(`label selector '${selector}': unbalanced ')'`);
    } else if (ch === ',' && depth === 0) {
      parts.push(selector.slice(start, i));
      start = i + 1;
    }
  }
  if (depth !== 0) throw new SelectorError(`label selector '${selector}': unbalanced '('`);
  parts.push(selector.slice(start));
  return parts;
}

function key(k, part) {
  if (!KEY.test(k)) throw new SelectorError(`label selector requirement '${part.trim()}': '${k}' is not a valid label key`);
  return k;
}

function value(v, part) {
  if (!VALUE.test(v)) throw new SelectorError(`label selector requirement '${part.trim()}': '${v}' is not a valid label value`);
  return v;
}

/**
 * The requirements of `selector` (all must match); null, undefined or '' match
 * everything. Throws SelectorError.
 * @param {string|null|undefined} selector
 * @returns {{key: string, op: string, values: string[]}[]}
 */
export function parse(selector) {
  if (selector === null || selector === undefined || selector.trim() === '') return [];
  const out = [];
  for (const part of split(selector)) {
    if (part.trim() === '') throw new SelectorError(`label selector '${selector}': empty requirement (a stray comma?)`);
    let m = SET.exec(part);
    if (m) {
      const values = m.groups.values.split(',').map((v) => v.trim());
      if (values.length === 1 && values[0] === '') throw new SelectorError(`label selector requirement '${part.trim()}': ${m.groups.op} needs at least one value`);
      out.push({ key: key(m.groups.key, part), op: m.groups.op, values: values.map((v) => value(v, part)) });
      continue;
    }
    m = EQUALITY.exec(part);
    if (m) {
      out.push({ key: key(m.groups.key, part), op: m.groups.op === '!=' ? '!=' : '=', values: [value(m.groups.value, part)] });
      continue;
    }
    m = ORDER.exec(part);
    if (m) {
      out.push({ key: key(m.groups.key, part), op: m.groups.op, values: [m.groups.value] });
      continue;
    }
    m = EXISTS.exec(part);
    if (m) {
      out.push({ key: key(m.groups.key, part), op: m.groups.not ? '!' : 'exists', values: [] });
      continue;
    }
    throw new SelectorError(
      `label selector requirement '${part.trim()}' is not one of key, !key, key=value, key!=value, key in (a,b), key notin (a,b), key>n, key<n`,
    );
  }
  return out;
}

function requirementMatches(r, labels) {
  const present = Object.prototype.hasOwnProperty.call(labels, r.key);
  const v = present ? labels[r.key] : undefined;
  switch (r.op) {
    case 'exists':
      return present;
    case '!':
      return !present;
    case '=':
    case 'in':
      return present && r.values.includes(v);
    case '!=':
    case 'notin':
      return !present || !r.values.includes(v);
    default: {
      if (!present || !/^-?[0-9]+$/.test(String(v))) return false;
      const n = Number(v);
      const bound = Number(r.values[0]);
      return r.op === '<' ? n < bound : n > bound;
    }
  }
}

/**
 * Whether `labels` satisfy every requirement of `selector` (a string or parsed requirements).
 * @param {string|{key: string, op: string, values: string[]}[]|null|undefined} selector
 * @param {Record<string, string>|undefined} labels
 */
export function matches(selector, labels) {
  const requirements = Array.isArray(selector) ? selector : parse(selector);
  return requirements.every((r) => requirementMatches(r, labels ?? {}));
}

/** {app: 'db', tier: 'x'} as 'app=db,tier=x' (every pair must match). */
export function fromObject(labels) {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}
