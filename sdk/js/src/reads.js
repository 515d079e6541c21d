// Reads of other objects (contract 0.2), answered by the host from its caches.
//
//   import { Resource, Side, reads } from '@syncweave/plugin';
//
//   const NAMESPACES = Resource.core('v1', 'namespaces');
//   const ns = reads.get(Side.KCP, NAMESPACES, obj.getNamespace());           // KubeObject or null
//   const dbs = reads.list(Side.SERVICE, new Resource('apps', 'v1', 'statefulsets'),
//                          { namespace: 'tenants', labelSelector: { app: 'db' } });  // KubeObject[]
//
// A plugin may read only what it declares in its `reads` ({side, resource, purpose}) and
// what its WasmPlugin or PublishedResource allows. A read that is not answered throws a
// ReadError subclass named after the contract's read-error: ReadNotAllowed, ReadNotServed,
// ReadUnavailable (may be retried) and ReadInvalid. Uncaught, it fails the call as
// `internal` with the read and the host's message.
//
// Inside a component the host's reads import answers; in `testing` the read fixtures of
// the test or example do.
import { currentCall } from './call.js';
import { ContractError, resourceText } from './contract.js';
import { Internal, ReadError } from './errors.js';
import { KubeObject } from './object.js';
import { fromObject } from './selector.js';
import { Resource, Side } from './types.js';

const SIDES = Object.values(Side);

function checkArgs(side, resource, namespace) {
  if (!SIDES.includes(side)) throw new TypeError(`side must be Side.KCP or Side.SERVICE, not ${JSON.stringify(side)}`);
  if (!(resource instanceof Resource)) {
    throw new TypeError(`resource must be a Resource (e.g. Resource.core('v1', 'namespaces')), not ${JSON.stringify(resource)}`);
  }
  if (namespace !== undefined && namespace !== null && (typeof namespace !== 'string' || namespace === '')) {
    throw new TypeError(`namespace must be a non-empty string, or left out for cluster-scoped resources; got ${JSON.stringify(namespace)}`);
  }
}

function backend(feature) {
  const call = currentCall(feature);
  if (!call.reads) throw new ContractError(`${feature}: plugin '${call.plugin.name}' cannot read (its world imports no reads)`);
  return call.reads;
}

function describeRead(verb, side, resource, fields) {
  const extra = Object.entries(fields)
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]) => `, ${k}=${JSON.stringify(v)}`)
    .join('');
  return `reads.${verb}(${side}, ${resourceText(resource)}${extra})`;
}

function object(text, read) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Internal(`${read}: the host answered with something that is not JSON: ${err.message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Internal(`${read}: the host answered with JSON that is not an object`);
  return KubeObject.from(value);
}

function rethrow(err, read) {
  if (err instanceof ReadError) {
    const cls = /** @type {any} */ (err.constructor);
    throw new cls(err.detail, read);
  }
  throw err;
}

/**
 * The object called `name` (in `namespace`; leave it out for cluster-scoped resources),
 * or null when it does not exist.
 * @param {'kcp'|'service'} side
 * @param {Resource} resource
 * @param {string} name
 * @param {{namespace?: string}} [opts]
 * @returns {import('./object.js').KubeObject & Record<string, any> | null}
 */
export function get(side, resource, name, { namespace } = {}) {
  checkArgs(side, resource, namespace);
  if (typeof name !== 'string' || name === '') throw new TypeError(`name must be a non-empty string, not ${JSON.stringify(name)}`);
  const read = describeRead('get', side, resource, { namespace, name });
  const reads = backend('reads.get');
  let text;
  try {
    text = reads.get(side, resource, namespace ?? undefined, name);
  } catch (err) {
    rethrow(err, read);
  }
  return text === undefined || text === null ? null : object(text, read);
}

/**
 * The objects of `resource`: in `namespace` (left out: every namespace the allow-list
 * grants, or the cluster-scoped objects), matching `labelSelector` (Kubernetes syntax such
 * as 'app=db,tier!=x', or an object of labels that must all match).
 * @param {'kcp'|'service'} side
 * @param {Resource} resource
 * @param {{namespace?: string, labelSelector?: string | Record<string, string>}} [opts]
 * @returns {(import('./object.js').KubeObject & Record<string, any>)[]}
 */
export function list(side, resource, { namespace, labelSelector } = {}) {
  checkArgs(side, resource, namespace);
  let selector = labelSelector;
  if (selector !== null && typeof selector === 'object') selector = fromObject(selector);
  if (selector !== undefined && selector !== null && typeof selector !== 'string') {
    throw new TypeError(`labelSelector must be a string or an object of labels, not ${JSON.stringify(selector)}`);
  }
  if (selector === '' || selector === null) selector = undefined;
  const read = describeRead('list', side, resource, { namespace, labelSelector: selector });
  const reads = backend('reads.list');
  let texts;
  try {
    texts = reads.list(side, resource, namespace ?? undefined, selector);
  } catch (err) {
    rethrow(err, read);
  }
  return Array.from(texts, (t) => object(t, read));
}
