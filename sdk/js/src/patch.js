// JSON Merge Patch (RFC 7386) and JSON Patch (RFC 6902). Both return a new value and
// never modify their inputs.

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
// Values here are JSON, so a JSON round trip is an exact deep copy (and needs no
// structuredClone, which not every engine a component embeds provides).
const clone = (v) => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

/** JSON equality (key order does not matter). */
export function jsonEqual(a, b) {
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  }
  if (isObject(a) || isObject(b)) {
    if (!isObject(a) || !isObject(b)) return false;
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
  }
  return a === b;
}

/** Applies a JSON merge patch: objects merge key by key, null removes a key. */
export function mergePatch(target, patch) {
  if (!isObject(patch)) return clone(patch);
  const out = isObject(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/**
 * The merge patch that turns `original` into `modified` ({} when they are equal). Arrays
 * are replaced as a whole, as RFC 7386 does.
 */
export function createMergePatch(original, modified) {
  if (!isObject(original) || !isObject(modified)) return clone(modified);
  const out = {};
  for (const k of Object.keys(original)) if (!Object.hasOwn(modified, k)) out[k] = null;
  for (const [k, v] of Object.entries(modified)) {
    if (!Object.hasOwn(original, k)) out[k] = clone(v);
    else if (!jsonEqual(original[k], v)) {
      out[k] = isObject(original[k]) && isObject(v) ? createMergePatch(original[k], v) : clone(v);
    }
  }
  return out;
}

/** A JSON patch could not be applied; `index` is the failing operation's position. */
export class PatchError extends Error {
  constructor(index, message) {
    super(`JSON patch operation ${index}: ${message}`);
    this.name = 'PatchError';
    this.index = index;
    this.detail = message;
  }
}

function pointer(text) {
  if (typeof text !== 'string') throw new Error('the path must be a string (a JSON pointer such as /metadata/labels/app)');
  if (text === '') return [];
  if (!text.startsWith('/')) throw new Error(`path '${text}' is not a JSON pointer: it must start with '/'`);
  return text.slice(1).split('/').map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function arrayIndex(token, length, forAdd) {
  if (forAdd && token === '-') return length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw new Error(`'${token}' is not an array index`);
  const i = Number(token);
  if (i > length || (i === length && !forAdd)) throw new Error(`array index ${i} is out of range (length ${length})`);
  return i;
}

const show = (tokens) => `/${tokens.join('/')}`;

function parentOf(doc, tokens) {
  let cur = doc;
  for (const t of tokens.slice(0, -1)) {
    if (isObject(cur)) {
      if (!Object.hasOwn(cur, t)) throw new Error(`${show(tokens)}: '${t}' does not exist`);
      cur = cur[t];
    } else if (Array.isArray(cur)) {
      cur = cur[arrayIndex(t, cur.length, false)];
    } else {
      throw new Error(`${show(tokens)}: cannot descend into a scalar at '${t}'`);
    }
  }
  return cur;
}

function getAt(doc, tokens) {
  if (tokens.length === 0) return doc;
  const parent = parentOf(doc, tokens);
  const last = tokens[tokens.length - 1];
  if (isObject(parent)) {
    if (!Object.hasOwn(parent, last)) throw new Error(`${show(tokens)} does not exist`);
    return parent[last];
  }
  if (Array.isArray(parent)) return parent[arrayIndex(last, parent.length, false)];
  throw new Error(`${show(tokens)} does not exist`);
}

function addAt(doc, tokens, value) {
  if (tokens.length === 0) return value;
  const parent = parentOf(doc, tokens);
  const last = tokens[tokens.length - 1];
  if (isObject(parent)) parent[last] = value;
  else if (Array.isArray(parent)) parent.splice(arrayIndex(last, parent.length, true), 0, value);
  else throw new Error(`${show(tokens)}: the parent is not an object or array`);
  return doc;
}

function removeAt(doc, tokens) {
  if (tokens.length === 0) throw new Error('cannot remove the whole document');
  const parent = parentOf(doc, tokens);
  const last = tokens[tokens.length - 1];
  if (isObject(parent)) {
    if (!Object.hasOwn(parent, last)) throw new Error(`${show(tokens)} does not exist`);
    delete parent[last];
  } else if (Array.isArray(parent)) {
    parent.splice(arrayIndex(last, parent.length, false), 1);
  } else {
    throw new Error(`${show(tokens)} does not exist`);
  }
  return doc;
}

/**
 * Applies a JSON patch (add, remove, replace, move, copy, test). All or nothing: throws
 * PatchError naming the failing operation, and `target` is never modified.
 */
export function jsonPatch(target, operations) {
  if (!Array.isArray(operations)) throw new PatchError(0, 'a JSON patch must be an array of operations');
  let doc = clone(target);
  operations.forEach((op, i) => {
    try {
      if (!isObject(op)) throw new Error('an operation must be an object');
      const path = pointer(op.path);
      if (['add', 'replace', 'test'].includes(op.op) && !Object.hasOwn(op, 'value')) throw new Error('missing field "value"');
      switch (op.op) {
        case 'add':
          doc = addAt(doc, path, clone(op.value));
          break;
        case 'remove':
          doc = removeAt(doc, path);
          break;
        case 'replace':
          getAt(doc, path);
          doc = path.length ? addAt(removeAt(doc, path), path, clone(op.value)) : clone(op.value);
          break;
        case 'move':
        case 'copy': {
          const from = pointer(op.from);
          if (op.op === 'move' && path.length > from.length && from.every((t, j) => path[j] === t)) {
            throw new Error('cannot move a value into one of its own children');
          }
          const value = clone(getAt(doc, from));
          if (op.op === 'move') doc = removeAt(doc, from);
          doc = addAt(doc, path, value);
          break;
        }
        case 'test': {
          const actual = getAt(doc, path);
          if (!jsonEqual(actual, op.value)) {
            throw new Error(`test failed: ${op.path} is ${JSON.stringify(actual)}, not ${JSON.stringify(op.value)}`);
          }
          break;
        }
        default:
          throw new Error(`unknown op '${op.op}' (expected add, remove, replace, move, copy or test)`);
      }
    } catch (err) {
      if (err instanceof PatchError) throw err;
      throw new PatchError(i, err.message);
    }
  });
  return doc;
}
