// Read and write JSON values by dotted path, with the syntax of the Rust SDK's `path`
// module (gjson reads, sjson writes: what upstream PublishedResource mutations use).
//
// - Keys are separated by `.`: `metadata.labels.app`.
// - A number selects an array element: `spec.containers.0.image`. On an object a number
//   is an ordinary key.
// - `\` escapes the next character: `metadata.annotations.example\.com/owner` (key()
//   escapes a key for you).
// - A leading `:` forces a segment to be an object key even if it is numeric.
// - Reads only: `*` and `?` match any run of characters / one character in a key (the
//   first matching key wins); `#` is an array's length or, followed by more path, maps
//   the rest of the path over every element (`spec.items.#.name`).
// - Writes only: `-1` appends to an array (for del(): removes the last element). Writing
//   to a missing path creates it: numeric segments create arrays (padded with null),
//   others objects; a scalar in the way is replaced.
//
// A path may also be an array of keys, taken literally (strings are object keys,
// numbers array indexes): get(obj, ['metadata', 'labels', 'example.com/team']).

/** The path cannot be used for this operation (the message says why and the fix). */
export class PathError extends Error {
  constructor(message) {
    super(message);
    this.name = 'PathError';
  }
}

const MISSING = Symbol('missing');
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Escapes one object key for use as a path segment. @param {string} k */
export function key(k) {
  let out = '';
  for (const [i, c] of [...k].entries()) {
    if ('\\.*?#'.includes(c) || (c === ':' && i === 0)) out += '\\';
    out += c;
  }
  return out;
}

function globToRegExp(parts) {
  let re = '^';
  for (const p of parts) {
    if (p === ANY_RUN) re += '.*';
    else if (p === ANY_ONE) re += '.';
    else re += p.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
  }
  return new RegExp(`${re}$`, 's');
}
const ANY_RUN = Symbol('*');
const ANY_ONE = Symbol('?');

function parse(path) {
  if (Array.isArray(path)) {
    return path.map((k) => ({ key: String(k), forceKey: typeof k !== 'number', pattern: null, hash: false }));
  }
  const raws = [];
  let cur = '';
  for (let i = 0; i < path.length; i++) {
    const c = path[i];
    if (c === '\\' && i + 1 < path.length) {
      cur += c + path[i + 1];
      i++;
    } else if (c === '.') {
      raws.push(cur);
      cur = '';
    } else {
      cur += c;
    }
  }
  raws.push(cur);
  return raws.map((raw) => {
    const forceKey = raw.startsWith(':');
    const body = forceKey ? raw.slice(1) : raw;
    let k = '';
    const parts = [];
    let wild = false;
    let escaped = false;
    for (let i = 0; i < body.length; i++) {
      const c = body[i];
      if (c === '\\' && i + 1 < body.length) {
        k += body[i + 1];
        parts.push(body[i + 1]);
        escaped = true;
        i++;
      } else if (c === '*' || c === '?') {
        wild = true;
        k += c;
        parts.push(c === '*' ? ANY_RUN : ANY_ONE);
      } else {
        k += c;
        parts.push(c);
      }
    }
    return { key: k, forceKey, pattern: wild ? globToRegExp(parts) : null, hash: k === '#' && !escaped && !forceKey };
  });
}

function index(seg) {
  if (seg.forceKey || seg.pattern || seg.hash) return null;
  return /^[0-9]+$/.test(seg.key) ? Number(seg.key) : null;
}
const isAppend = (seg) => !seg.forceKey && seg.key === '-1';

function getIn(value, segs) {
  let cur = value;
  for (let n = 0; n < segs.length; n++) {
    const seg = segs[n];
    if (seg.hash) {
      if (!Array.isArray(cur)) return MISSING;
      const rest = segs.slice(n + 1);
      if (rest.length === 0) return cur.length;
      return cur.map((item) => getIn(item, rest)).filter((v) => v !== MISSING);
    }
    if (isObject(cur)) {
      if (seg.pattern) {
        const found = Object.keys(cur).find((k) => seg.pattern.test(k));
        if (found === undefined) return MISSING;
        cur = cur[found];
      } else if (Object.hasOwn(cur, seg.key)) {
        cur = cur[seg.key];
      } else {
        return MISSING;
      }
    } else if (Array.isArray(cur)) {
      const i = index(seg);
      if (i === null || i >= cur.length) return MISSING;
      cur = cur[i];
    } else {
      return MISSING;
    }
  }
  return cur;
}

/**
 * The value at `path`, or `dflt` when nothing is there. The result is the value inside
 * `value`, not a copy.
 * @param {unknown} value
 * @param {string|Array<string|number>} path
 * @param {unknown} [dflt]
 */
export function get(value, path, dflt = undefined) {
  const got = getIn(value, parse(path));
  return got === MISSING ? dflt : got;
}

/** Whether `path` names something in `value` (a null there counts). */
export function has(value, path) {
  return getIn(value, parse(path)) !== MISSING;
}

/**
 * The value at `path` coerced to a string like gjson's String(): strings as they are,
 * null/missing as '', booleans and numbers in JSON form, objects and arrays as compact
 * JSON.
 * @returns {string}
 */
export function getString(value, path) {
  const got = getIn(value, parse(path));
  if (got === MISSING || got === null || got === undefined) return '';
  if (typeof got === 'string') return got;
  return JSON.stringify(got);
}

function checkWritable(path, segs) {
  if (segs.length === 0 || (typeof path === 'string' && path === '')) {
    throw new PathError('the path is empty; name the field to write, e.g. "spec.replicas"');
  }
  for (const seg of segs) {
    if (seg.pattern) {
      throw new PathError(
        `path '${path}' contains a wildcard (* or ?), which can only be used to read; escape it as \\* or \\? if it is part of a key`,
      );
    }
    if (seg.hash) {
      throw new PathError(`path '${path}' contains '#', which can only be used to read; escape it as \\# if it is part of a key`);
    }
  }
}

const containerFor = (seg) => (index(seg) !== null || isAppend(seg) ? [] : {});
const isContainer = (v) => v !== null && typeof v === 'object';

/**
 * Writes `newValue` at `path` in `value` (an object or array), creating what is missing.
 * Throws PathError for read-only syntax or a key used on an array.
 */
export function set(value, path, newValue) {
  const segs = parse(path);
  checkWritable(path, segs);
  let cur = value;
  for (let n = 0; n < segs.length; n++) {
    const seg = segs[n];
    const last = n === segs.length - 1;
    const next = last ? null : segs[n + 1];
    if (Array.isArray(cur)) {
      if (isAppend(seg)) {
        cur.push(last ? newValue : containerFor(next));
        cur = cur[cur.length - 1];
        continue;
      }
      const i = index(seg);
      if (i === null) {
        throw new PathError(`path '${path}': cannot use key '${seg.key}' on an array; use a numeric index or -1 to append`);
      }
      while (cur.length <= i) cur.push(null);
      if (last) {
        cur[i] = newValue;
        return;
      }
      if (!isContainer(cur[i])) cur[i] = containerFor(next);
      cur = cur[i];
    } else if (isObject(cur)) {
      if (last) {
        cur[seg.key] = newValue;
        return;
      }
      if (!isContainer(cur[seg.key])) cur[seg.key] = containerFor(next);
      cur = cur[seg.key];
    } else {
      throw new PathError(`path '${path}': the value to write into is not an object or array`);
    }
  }
}

/** Removes what `path` names and returns it (undefined when nothing was there). */
export function del(value, path) {
  const segs = parse(path);
  checkWritable(path, segs);
  const parent = segs.length > 1 ? getIn(value, segs.slice(0, -1)) : value;
  const last = segs[segs.length - 1];
  if (isObject(parent)) {
    if (!Object.hasOwn(parent, last.key)) return undefined;
    const old = parent[last.key];
    delete parent[last.key];
    return old;
  }
  if (Array.isArray(parent)) {
    if (isAppend(last)) return parent.pop();
    const i = index(last);
    if (i !== null && i < parent.length) return parent.splice(i, 1)[0];
  }
  return undefined;
}
