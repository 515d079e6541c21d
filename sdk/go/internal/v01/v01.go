//go:build wasip1

package v01

import (
	"syncweave.dev/sdk/go/internal/abi"
	"syncweave.dev/sdk/go/internal/cabi"
	"syncweave.dev/sdk/go/internal/roles"
	"syncweave.dev/sdk/go/internal/sink"
	"syncweave.dev/sdk/go/plugin"
)

// Handler is the registered plugin; World names its role for messages.
var (
	Handler roles.Meta
	World   string
)

//go:wasmimport syncweave:plugin/host-log@0.1.0 log
func hostLog(level uint32, message string)

func init() { sink.Log = hostLog }

//go:wasmexport syncweave:plugin/meta@0.1.0#describe
func exportDescribe() uint32 {
	cabi.Enter()
	defer cabi.Leave()
	return abi.Describe(cabi.Mem, Handler, plugin.Contract01, World)
}

//go:wasmexport cabi_post_syncweave:plugin/meta@0.1.0#describe
func postDescribe(uint32) { cabi.Mem.Release() }

//go:wasmexport syncweave:plugin/meta@0.1.0#validate-config
func exportValidateConfig(ptr, n uint32) uint32 {
	cabi.Enter()
	defer cabi.Leave()
	return abi.ValidateConfig(cabi.Mem, Handler, World, ptr, n)
}

//go:wasmexport cabi_post_syncweave:plugin/meta@0.1.0#validate-config
func postValidateConfig(uint32) { cabi.Mem.Release() }
