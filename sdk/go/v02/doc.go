// Package v02 is only documentation: its subpackages mutator, namer,
// projector and renderer make a Go plugin a component of contract 0.2
// (syncweave:plugin@0.2.0, wit/v0.2/plugin.wit). Beside what 0.1 offers, a
// plugin of 0.2 reads other objects it declares in Info.Reads
// ([plugin.Context.Get], [plugin.Context.List]), returns a [plugin.Report]
// (Events, conditions, context values for later steps of a chain) and sees
// the context values earlier steps set ([plugin.Context.Value]).
//
// Moving a plugin from 0.1 to 0.2 is changing the import path of its role
// package and adding the report parameter to its role function.
package v02
