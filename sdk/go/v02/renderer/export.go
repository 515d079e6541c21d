//go:build wasip1

package renderer

import (
	"syncweave.dev/sdk/go/internal/abi"
	"syncweave.dev/sdk/go/internal/cabi"
	"syncweave.dev/sdk/go/internal/roles"
	"syncweave.dev/sdk/go/internal/v02"
	"syncweave.dev/sdk/go/internal/v02reads"
)

func init() {
	v02.World = "renderer"
	onRegister = func(p roles.Meta) { v02.Handler = p }
}

//go:wasmexport syncweave:plugin/rendering@0.2.0#render
func exportRender(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15 uint32) uint32 {
	cabi.Enter()
	defer cabi.Leave()
	return abi.Render02(cabi.Mem, registered, []uint32{a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15}, v02reads.Reader)
}

//go:wasmexport cabi_post_syncweave:plugin/rendering@0.2.0#render
func postRender(uint32) { cabi.Mem.Release() }
