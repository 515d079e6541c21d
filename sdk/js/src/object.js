// Kubernetes objects as plugins see them.
//
// A KubeObject holds the object's JSON fields as its own properties (so obj.spec,
// obj.metadata and JSON.stringify(obj) work as usual) and adds typed helpers on its
// prototype for what plugins touch most: identity, labels and annotations, paths and
// patches. Mutators and namers receive their object as a KubeObject; wrap any other
// object with KubeObject.from(value) (it shares nested values).
//
// Reading never changes the object: labels() of an object without labels is an empty
// frozen object, and nothing is added to the output until you write.
import { InvalidInput } from './errors.js';
import * as patches from './patch.js';
import * as paths from './path.js';

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const EMPTY = Object.freeze({});

export class KubeObject {
  /**
   * A KubeObject with the fields of `value` (a shallow copy).
   * @param {Record<string, any>} value
   * @returns {KubeObject & Record<string, any>}
   */
  static from(value) {
    if (!isObject(value)) throw new InvalidInput('the object must be a JSON object');
    return Object.assign(new KubeObject(), value);
  }

  /** @returns {Record<string, any>} */
  #metadataOrEmpty() {
    const md = this.metadata;
    if (md === undefined || md === null) return EMPTY;
    if (!isObject(md)) throw new InvalidInput('metadata must be an object');
    return md;
  }

  /** @returns {string|undefined} */
  getName() {
    const v = this.#metadataOrEmpty().name;
    return typeof v === 'string' ? v : undefined;
  }

  /** @returns {string|undefined} undefined for cluster-scoped objects */
  getNamespace() {
    const v = this.#metadataOrEmpty().namespace;
    return typeof v === 'string' ? v : undefined;
  }

  /** `metadata`, created when missing; throws InvalidInput when it is not an object. */
  ensureMetadata() {
    if (this.metadata === undefined || this.metadata === null) this.metadata = {};
    if (!isObject(this.metadata)) throw new InvalidInput('metadata must be an object');
    return this.metadata;
  }

  #map(field) {
    const m = this.#metadataOrEmpty()[field];
    if (m === undefined || m === null) return EMPTY;
    if (!isObject(m)) throw new InvalidInput(`metadata.${field} must be an object`);
    return Object.freeze({ ...m });
  }

  #writableMap(field) {
    const md = this.ensureMetadata();
    if (md[field] === undefined || md[field] === null) md[field] = {};
    if (!isObject(md[field])) throw new InvalidInput(`metadata.${field} must be an object`);
    return md[field];
  }

  /** The labels, as a frozen copy (write with setLabel). @returns {Readonly<Record<string, string>>} */
  labels() {
    return this.#map('labels');
  }

  /** The annotations, as a frozen copy (write with setAnnotation). @returns {Readonly<Record<string, string>>} */
  annotations() {
    return this.#map('annotations');
  }

  /** @returns {string|undefined} */
  label(key) {
    const m = this.#map('labels');
    return Object.hasOwn(m, key) ? m[key] : undefined;
  }

  /** @param {string} key @param {string} value */
  setLabel(key, value) {
    if (typeof value !== 'string') throw new TypeError(`label '${key}': values must be strings, not ${typeof value}`);
    this.#writableMap('labels')[key] = value;
  }

  /** Removes a label; returns its value (undefined when it was not set). */
  removeLabel(key) {
    if (!Object.hasOwn(this.#map('labels'), key)) return undefined;
    const m = this.#writableMap('labels');
    const old = m[key];
    delete m[key];
    return old;
  }

  /** @returns {string|undefined} */
  annotation(key) {
    const m = this.#map('annotations');
    return Object.hasOwn(m, key) ? m[key] : undefined;
  }

  /** @param {string} key @param {string} value */
  setAnnotation(key, value) {
    if (typeof value !== 'string') throw new TypeError(`annotation '${key}': values must be strings, not ${typeof value}`);
    this.#writableMap('annotations')[key] = value;
  }

  removeAnnotation(key) {
    if (!Object.hasOwn(this.#map('annotations'), key)) return undefined;
    const m = this.#writableMap('annotations');
    const old = m[key];
    delete m[key];
    return old;
  }

  /** The value at a dotted path (see path.js). */
  getPath(path, dflt = undefined) {
    return paths.get(this, path, dflt);
  }

  getString(path) {
    return paths.getString(this, path);
  }

  hasPath(path) {
    return paths.has(this, path);
  }

  setPath(path, value) {
    paths.set(this, path, value);
  }

  deletePath(path) {
    return paths.del(this, path);
  }

  #replaceWith(result, what) {
    if (!isObject(result)) throw new InvalidInput(`a ${what} must turn an object into an object`);
    for (const k of Object.keys(this)) delete this[k];
    Object.assign(this, result);
  }

  /** Applies a JSON merge patch (RFC 7386) in place. */
  mergePatch(patch) {
    this.#replaceWith(patches.mergePatch({ ...this }, patch), 'merge patch');
  }

  /** Applies a JSON patch (RFC 6902) in place, all or nothing. */
  jsonPatch(operations) {
    this.#replaceWith(patches.jsonPatch({ ...this }, operations), 'JSON patch');
  }

  /** A plain object with the same fields. */
  toJSON() {
    return { ...this };
  }
}
