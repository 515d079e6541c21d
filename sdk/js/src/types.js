// Plain JavaScript versions of the contract's types (wit/plugin.wit, interface `types`).

/** Which way an object is travelling. */
export const Direction = Object.freeze({
  /** From a consumer's kcp workspace down to the service cluster (spec). */
  KCP_TO_SERVICE: 'kcp-to-service',
  /** From the service cluster back up to kcp (status, related objects). */
  SERVICE_TO_KCP: 'service-to-kcp',
});

/**
 * Where a call comes from. A plugin gets nothing else from the host: no clock, no
 * randomness, no I/O.
 * @typedef {object} Context
 * @property {string} clusterName logical cluster name of the consumer workspace
 * @property {string|undefined} clusterPath workspace path (e.g. root:org:team), when known
 * @property {'kcp-to-service'|'service-to-kcp'} direction
 * @property {string} owner the PublishedResource or InitTarget the call is made for
 */

/**
 * The context worked examples run in (`syncweave plugin test --examples`, the host's
 * self-test and the testing harness).
 * @returns {Context}
 */
export function fixtureContext() {
  return { clusterName: 'fixture-cluster', clusterPath: 'root:fixture', direction: Direction.KCP_TO_SERVICE, owner: 'fixture' };
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
 */

/**
 * What a namer returns; `namespace` undefined for cluster-scoped objects.
 * @typedef {object} ObjectName
 * @property {string} name
 * @property {string} [namespace]
 */
