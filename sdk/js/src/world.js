// The contract version of the WIT world a component is being built against.
//
// `syncweave plugin build` replaces this module while it bundles the entry module (its
// bundler resolves '@syncweave/plugin/world' to `export const contract = '0.2'`, the
// version the project's package.json names), so that exportPlugin can stop the build when
// the plugin's own `contract` differs. Outside a build (node tests) it is undefined.

/** @type {string | undefined} */
export const contract = undefined;
