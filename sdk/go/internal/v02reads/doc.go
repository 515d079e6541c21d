// Package v02reads is the contract 0.2 `reads` import. The mutator, namer
// and renderer worlds import it; the projector world does not, so only
// their role packages link this package.
package v02reads
