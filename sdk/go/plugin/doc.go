// Package plugin holds what every syncweave plugin written in Go shares,
// whatever its role and contract version: the call [Context], typed
// [Error]s, the plugin's [Info] with worked [Example]s, the [Object] a
// mutator edits (get and set by path, labels, annotations, patches), and,
// for contract 0.2, reads of other objects ([Context.Get], [Context.List])
// and the [Report] a call returns beside its output.
//
// A plugin is a main package that registers one role from one role
// package in its init function:
//
//	contract 0.1: syncweave.dev/sdk/go/mutator, namer, projector, renderer
//	contract 0.2: syncweave.dev/sdk/go/v02/mutator, namer, projector, renderer
//
// The role package decides the component's world: `syncweave plugin build`
// builds the main package with GOOS=wasip1 GOARCH=wasm and reads the world
// from the role package it imports. Import exactly one.
//
// Objects, configs and schemas cross the boundary as JSON text, as in the
// contract (wit/plugin.wit). In [Info] and [Example], every JSON field is
// JSON text.
package plugin

// Version is the version of this SDK: that of the contract it was first
// written for (wit/plugin.wit, syncweave:plugin@0.1.0), like the other SDKs.
const Version = "0.1.0"

// Contract names a version of the plugin contract.
type Contract string

const (
	// Contract01 is syncweave:plugin@0.1.0 (wit/plugin.wit).
	Contract01 Contract = "0.1"
	// Contract02 is syncweave:plugin@0.2.0 (wit/v0.2/plugin.wit): reads,
	// reports and context values.
	Contract02 Contract = "0.2"
)
