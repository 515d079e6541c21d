//go:build wasip1

package mutator

import (
	"syncweave.dev/sdk/go/internal/abi"
	"syncweave.dev/sdk/go/internal/cabi"
	"syncweave.dev/sdk/go/internal/roles"
	"syncweave.dev/sdk/go/internal/v02"
	"syncweave.dev/sdk/go/internal/v02reads"
)

func init() {
	v02.World = "mutator"
	onRegister = func(p roles.Meta) { v02.Handler = p }
}

// mutate's parameters flatten to 17 values, over the canonical ABI's 16:
// the host stores them in memory and passes their address.
//
//go:wasmexport syncweave:plugin/mutation@0.2.0#mutate
func exportMutate(params uint32) uint32 {
	cabi.Enter()
	defer cabi.Leave()
	return abi.Mutate02(cabi.Mem, registered, params, v02reads.Reader)
}

//go:wasmexport cabi_post_syncweave:plugin/mutation@0.2.0#mutate
func postMutate(uint32) { cabi.Mem.Release() }
