module {{name}}

go 1.24

require syncweave.dev/sdk/go v0.0.0

// The Go SDK is not published to a module proxy: it comes from the sdk/go
// directory of a syncweave checkout.
replace syncweave.dev/sdk/go => {{sdk_go}}
