// The state of the call in progress: which plugin, its contract, the context values it
// was given, the report it is filling and the reads backend that answers it. The adapters
// open one call around every role function; reads.js and report.js find it here. A
// component serves one call at a time, and so does the local harness.
import { ContractError, needs02 } from './contract.js';

/** @type {null | {plugin: object, contract: string, values: Record<string, unknown>, reads: object|null, report: object}} */
let current = null;

export function emptyReport() {
  return { results: [], conditions: [], setContext: {} };
}

/** Runs `fn` with `call` as the call in progress. */
export function withCall(call, fn) {
  const previous = current;
  current = call;
  try {
    return fn();
  } finally {
    current = previous;
  }
}

/** The call in progress, for a contract 0.2 `feature`; ContractError outside a call or under 0.1. */
export function currentCall(feature) {
  if (current === null) {
    throw new ContractError(
      `${feature} was called outside a plugin call; it works only while the host (or the testing harness) calls mutate, nameObject or render`,
    );
  }
  if (current.contract === '0.1') throw needs02(current.plugin, feature);
  return current;
}
