//go:build wasip1

package projector

import (
	"syncweave.dev/sdk/go/internal/abi"
	"syncweave.dev/sdk/go/internal/cabi"
	"syncweave.dev/sdk/go/internal/roles"
	"syncweave.dev/sdk/go/internal/v02"
)

func init() {
	v02.World = "projector"
	onRegister = func(p roles.Meta) { v02.Handler = p }
}

//go:wasmexport syncweave:plugin/projection@0.2.0#project
func exportProject(a0, a1, a2, a3 uint32) uint32 {
	cabi.Enter()
	defer cabi.Leave()
	return abi.Project(cabi.Mem, registered, []uint32{a0, a1, a2, a3})
}

//go:wasmexport cabi_post_syncweave:plugin/projection@0.2.0#project
func postProject(uint32) { cabi.Mem.Release() }
