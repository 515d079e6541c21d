module syncweave.dev/sdk/go

// 1.24 is the first Go with //go:wasmexport and -buildmode=c-shared for
// wasip1; the SDK is tested with 1.26.
go 1.24
