module go-mutator02

go 1.24

require syncweave.dev/sdk/go v0.0.0

replace syncweave.dev/sdk/go => ../../../../../sdk/go
