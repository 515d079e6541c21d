package abi

// Layouts of the contract's types (byte offsets and sizes), checked by
// layout_test.go against sizes and offsets computed from the WIT types.
const (
	// string, list<T>: pointer, length.
	strSize = 8
	// option<string>: discriminant, string at +4.
	optStrSize = 12

	// plugin-error: case, message.
	errCase, errMsg = 0, 4

	// context (0.2; 0.1 is the same without values).
	ctxName, ctxPath, ctxDir, ctxOwner, ctxValues = 0, 8, 20, 24, 32
	ctx02Size                                     = 40
	// context-entry.
	entryKey, entryValue, entrySize = 0, 8, 16

	// result<T, plugin-error>: discriminant, payload at 4.
	resDisc, resPayload = 0, 4
	// result<string, plugin-error> (mutate 0.1, project), size 16.
	resStringSize = 16
	// result<object-name, plugin-error> (name 0.1): name at 4, namespace at 12.
	resNameName, resNameNamespace, resNameSize = 4, 12, 24
	// result<list<string>, plugin-error> (render 0.1), size 16.
	resListSize = 16
	// result<_, string> (validate-config).
	resUnitErr, resUnitSize = 4, 12

	// plugin-info.
	infoName, infoVersion, infoDescription, infoSchema, infoExamples, infoReads = 0, 8, 16, 24, 36, 44
	info01Size, info02Size                                                      = 44, 52
	// fixture.
	fixName, fixConfig, fixInput, fixExpected, fixReads, fixValues = 0, 8, 16, 24, 36, 44
	fix01Size, fix02Size                                           = 36, 52
	// resource (inside read-declaration and read-fixture at 4).
	resGroup, resVersion, resResource, resourceSize = 0, 8, 16, 24
	// read-declaration: side, resource, purpose.
	declSide, declResource, declPurpose, declSize = 0, 4, 28, 36
	// read-fixture: side, resource, objects.
	rfSide, rfResource, rfObjects, rfSize = 0, 4, 28, 36

	// report.
	repResults, repConditions, repContext, reportSize = 0, 8, 16, 24
	// call-result.
	crSeverity, crReason, crMessage, crSize = 0, 4, 12, 20
	// condition.
	condType, condStatus, condReason, condMessage, condSize = 0, 8, 16, 24, 32

	// mutate (0.2) parameters, passed by pointer (17 flat values > 16).
	mp02Ctx, mp02Config, mp02Object, mp02Other, mp02Size = 0, 40, 48, 56, 68
	// result<mutated, plugin-error>: object at 4, report at 12.
	resMutObject, resMutReport, resMutSize = 4, 12, 36
	// result<named, plugin-error>: name at 4, namespace at 12, report at 24.
	resNamedName, resNamedNamespace, resNamedReport, resNamedSize = 4, 12, 24, 48
	// result<rendered, plugin-error>: documents at 4, report at 12.
	resRendDocs, resRendReport, resRendSize = 4, 12, 36

	// reads.get result: result<option<string>, read-error>.
	rgOptDisc, rgOptString, rgSize = 4, 8, 16
	// reads.list result: result<list<string>, read-error>.
	rlList, rlSize = 4, 16
)

// Flat parameter counts (the canonical ABI passes up to 16 flat values).
const (
	flatCtx01    = 8
	flatCtx02    = 10
	flatMutate01 = 15
	flatName01   = 12
	flatProject  = 4
	flatRender01 = 14
	flatName02   = 14
	flatRender02 = 16
	flatReadsGet = 12
	flatReadsLst = 13
)
