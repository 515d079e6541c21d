//go:build wasip1

package namer

import (
	"syncweave.dev/sdk/go/internal/abi"
	"syncweave.dev/sdk/go/internal/cabi"
	"syncweave.dev/sdk/go/internal/roles"
	"syncweave.dev/sdk/go/internal/v01"
)

func init() {
	v01.World = "namer"
	onRegister = func(p roles.Meta) { v01.Handler = p }
}

//go:wasmexport syncweave:plugin/naming@0.1.0#name
func exportName(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11 uint32) uint32 {
	cabi.Enter()
	defer cabi.Leave()
	return abi.Name01(cabi.Mem, registered, []uint32{a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11})
}

//go:wasmexport cabi_post_syncweave:plugin/naming@0.1.0#name
func postName(uint32) { cabi.Mem.Release() }
