// Plain JavaScript versions of the contract's types (wit/plugin.wit, interface `types`, and
// wit/v0.2/plugin.wit for what contract 0.2 adds: reads, reports and context values).

/** Which way an object is travelling. */
export const Direction = Object.freeze({
  /** From a consumer's kcp workspace down to the service cluster (spec). */
  KCP_TO_SERVICE: 'kcp-to-service',
  /** From the service cluster back up to kcp (status, related objects). */
  SERVICE_TO_KCP: 'service-to-kcp',
});

/**
 * Where a call comes from. A plugin gets nothing else from the host: no clock, no
 * randomness, and no I/O but `reads` (contract 0.2).
 * @typedef {object} Context
 * @property {string} clusterName logical cluster name of the consumer workspace
 * @property {string|undefined} clusterPath workspace path (e.g. root:org:team), when known
 * @property {'kcp-to-service'|'service-to-kcp'} direction
 * @property {string} owner the PublishedResource or InitTarget the call is made for
 * @property {Readonly<Record<string, unknown>>} values contract 0.2: the values earlier
 *   steps of the same mutation chain set (report.setContext), JSON values by key, in the
 *   order they were set; empty for the first step, outside chains and under contract 0.1
 */

/**
 * The context worked examples run in (`syncweave plugin test --examples`, the host's
 * self-test and the testing harness), with `values` from earlier steps (contract 0.2).
 * @param {Record<string, unknown>} [values]
 * @returns {Context}
 */
export function fixtureContext(values = {}) {
  return {
    clusterName: 'fixture-cluster',
    clusterPath: 'root:fixture',
    direction: Direction.KCP_TO_SERVICE,
    owner: 'fixture',
    values: Object.freeze({ ...values }),
  };
}

/**
 * One worked example shipped in describe(): JSON values, not text. `input` is the object
 * (mutator, namer), the CRD (projector) or the values (renderer); `expected` is the
 * object, `{name, namespace}`, the CRD or the list of objects; leave it out when the
 * output is not deterministic.
 * @typedef {object} Example
 * @property {string} name
 * @property {unknown} config
 * @property {unknown} input
 * @property {unknown} [expected]
 * @property {ReadFixture[]} [reads] contract 0.2: what the plugin's reads see (a read of a
 *   declared resource without a fixture sees no objects)
 * @property {Record<string, unknown>} [values] contract 0.2: context values from earlier steps
 */

/**
 * What a namer returns; `namespace` undefined for cluster-scoped objects.
 * @typedef {object} ObjectName
 * @property {string} name
 * @property {string} [namespace]
 */

// --- contract 0.2: reads ---------------------------------------------------------------

/** Which API server a read goes to (contract 0.2). */
export const Side = Object.freeze({
  /** The consumer's workspace in kcp (the workspace of the object the call is made for). */
  KCP: 'kcp',
  /** The provider's service cluster. */
  SERVICE: 'service',
});

const DNS_LABELS = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * A resource type: API group ('' for the core group), version and the plural, lower-case
 * resource name ('namespaces', not the kind 'Namespace').
 *
 *   const NAMESPACES = Resource.core('v1', 'namespaces');
 *   const DEPLOYMENTS = new Resource('apps', 'v1', 'deployments');   // or Resource.of('apps/v1', 'deployments')
 */
export class Resource {
  /**
   * @param {string} group
   * @param {string} version
   * @param {string} resource
   */
  constructor(group, version, resource) {
    for (const [what, v] of [['group', group], ['version', version], ['resource', resource]]) {
      if (typeof v !== 'string') throw new TypeError(`Resource ${what} must be a string, not ${typeof v}`);
    }
    if (group !== '' && !DNS_LABELS.test(group)) throw new TypeError(`Resource group '${group}' is not an API group (e.g. 'apps', or '' for the core group)`);
    if (version === '' || version.includes('/')) {
      throw new TypeError(`Resource version '${version}' must be a version such as 'v1'; give the group separately, or use Resource.of('apps/v1', ...)`);
    }
    if (!DNS_LABELS.test(resource)) {
      const hint = /^[A-Z]/.test(resource) ? ` ('${resource}' looks like a kind; reads name the resource, e.g. 'namespaces' for kind Namespace)` : '';
      throw new TypeError(`Resource resource '${resource}' must be the plural, lower-case resource name${hint}`);
    }
    this.group = group;
    this.version = version;
    this.resource = resource;
    Object.freeze(this);
  }

  /** A resource of the core group: Resource.core('v1', 'namespaces'). */
  static core(version, resource) {
    return new Resource('', version, resource);
  }

  /** From an apiVersion as objects carry it: Resource.of('apps/v1', 'deployments'). */
  static of(apiVersion, resource) {
    const i = apiVersion.lastIndexOf('/');
    return new Resource(i < 0 ? '' : apiVersion.slice(0, i), apiVersion.slice(i + 1), resource);
  }

  toString() {
    return this.group ? `${this.group}/${this.version}/${this.resource}` : `${this.version}/${this.resource}`;
  }
}

/**
 * One kind of object a plugin reads (contract 0.2), listed in the plugin's `reads` and
 * published by describe(). The host refuses every read that is not declared, and every
 * read its WasmPlugin or PublishedResource does not allow.
 * @typedef {object} ReadDeclaration
 * @property {'kcp'|'service'} side
 * @property {Resource} resource
 * @property {string} purpose why the plugin reads it, shown by `syncweave plugin inspect`
 */

/**
 * The objects of one resource that reads see in an example or a test (contract 0.2).
 * @typedef {object} ReadFixture
 * @property {'kcp'|'service'} side
 * @property {Resource} resource
 * @property {object[]} objects JSON objects; get finds one by metadata.namespace and
 *   metadata.name, list filters them by namespace and label selector
 */

// --- contract 0.2: reports -------------------------------------------------------------

/** How much a result matters (contract 0.2). A fatal result is a thrown PluginError. */
export const Severity = Object.freeze({
  /** Worth telling the consumer (a Normal Event). */
  NORMAL: 'normal',
  /** Something is wrong or missing, but the output is usable (a Warning Event). */
  WARNING: 'warning',
});

/**
 * What a call reports beside its output (contract 0.2); testing.call returns it.
 * @typedef {object} Report
 * @property {{severity: 'normal'|'warning', reason: string, message: string}[]} results
 * @property {{type: string, status: 'True'|'False'|'Unknown', reason: string, message: string}[]} conditions
 * @property {Record<string, unknown>} setContext JSON values by key, in the order first set
 */
