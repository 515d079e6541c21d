//go:build wasip1

package v02reads

import (
	"syncweave.dev/sdk/go/internal/abi"
	"syncweave.dev/sdk/go/internal/cabi"
	"syncweave.dev/sdk/go/plugin"
)

//go:wasmimport syncweave:plugin/reads@0.2.0 get
func readsGet(side, gPtr, gLen, vPtr, vLen, rPtr, rLen, nsDisc, nsPtr, nsLen, namePtr, nameLen, ret uint32)

//go:wasmimport syncweave:plugin/reads@0.2.0 list
func readsList(side, gPtr, gLen, vPtr, vLen, rPtr, rLen, nsDisc, nsPtr, nsLen, selDisc, selPtr, selLen, ret uint32)

// Reader answers a 0.2 call's reads through the host.
var Reader plugin.Reader = abi.NewReader(cabi.Mem, abi.ReadsImport{
	Get: func(p []uint32, ret uint32) {
		readsGet(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11], ret)
	},
	List: func(p []uint32, ret uint32) {
		readsList(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11], p[12], ret)
	},
	Around: cabi.Around,
})
