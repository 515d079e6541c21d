package abi

import "testing"

// A small implementation of the canonical ABI's size, alignment, field
// offsets and flattening for the types the contract uses (strings, lists,
// enums, records and variants of i32-only payloads), to check the
// constants in layout.go against the WIT types rather than against numbers
// written by hand.

type ty struct {
	size, align, flat int
	offsets           []int // record fields
	payload           int   // variant payload offset
}

func alignTo(n, a int) int { return (n + a - 1) / a * a }

var (
	tStr  = ty{size: 8, align: 4, flat: 2}
	tEnum = ty{size: 1, align: 1, flat: 1}
)

func tList(ty) ty { return ty{size: 8, align: 4, flat: 2} }

func tRecord(fields ...ty) ty {
	r := ty{align: 1}
	off := 0
	for _, f := range fields {
		off = alignTo(off, f.align)
		r.offsets = append(r.offsets, off)
		off += f.size
		r.align = max(r.align, f.align)
		r.flat += f.flat
	}
	r.size = alignTo(off, r.align)
	return r
}

// tVariant: cases are payload types or nil (no payload); fewer than 256
// cases, so the discriminant is one byte.
func tVariant(cases ...*ty) ty {
	maxAlign, maxSize, maxFlat := 1, 0, 0
	for _, c := range cases {
		if c == nil {
			continue
		}
		maxAlign = max(maxAlign, c.align)
		maxSize = max(maxSize, c.size)
		maxFlat = max(maxFlat, c.flat)
	}
	v := ty{align: maxAlign, payload: alignTo(1, maxAlign), flat: 1 + maxFlat}
	v.size = alignTo(v.payload+maxSize, maxAlign)
	return v
}

func p(t ty) *ty { return &t }

func tOption(t ty) ty        { return tVariant(nil, &t) }
func tResult(ok, err *ty) ty { return tVariant(ok, err) }

// The contract's types, written as in wit/plugin.wit and wit/v0.2/plugin.wit.
var (
	wEntry       = tRecord(tStr, tStr)
	wCtx01       = tRecord(tStr, tOption(tStr), tEnum, tStr)
	wCtx02       = tRecord(tStr, tOption(tStr), tEnum, tStr, tList(wEntry))
	wPluginError = tVariant(&tStr, &tStr, &tStr, &tStr)
	wFixture01   = tRecord(tStr, tStr, tStr, tOption(tStr))
	wResource    = tRecord(tStr, tStr, tStr)
	wReadFixture = tRecord(tEnum, wResource, tList(tStr))
	wReadDecl    = tRecord(tEnum, wResource, tStr)
	wFixture02   = tRecord(tStr, tStr, tStr, tOption(tStr), tList(wReadFixture), tList(wEntry))
	wInfo01      = tRecord(tStr, tStr, tStr, tOption(tStr), tList(wFixture01))
	wInfo02      = tRecord(tStr, tStr, tStr, tOption(tStr), tList(wFixture02), tList(wReadDecl))
	wCallResult  = tRecord(tEnum, tStr, tStr)
	wCondition   = tRecord(tStr, tStr, tStr, tStr)
	wReport      = tRecord(tList(wCallResult), tList(wCondition), tList(wEntry))
	wObjectName  = tRecord(tStr, tOption(tStr))
	wMutated     = tRecord(tStr, wReport)
	wNamed       = tRecord(wObjectName, wReport)
	wRendered    = tRecord(tList(tStr), wReport)
	wReadError   = tVariant(&tStr, &tStr, &tStr, &tStr)

	wMutateParams01 = tRecord(wCtx01, tStr, tStr, tOption(tStr))
	wNameParams01   = tRecord(wCtx01, tStr, tStr)
	wRenderParams01 = tRecord(wCtx01, tStr, tStr, tStr)
	wProjectParams  = tRecord(tStr, tStr)
	wMutateParams02 = tRecord(wCtx02, tStr, tStr, tOption(tStr))
	wNameParams02   = tRecord(wCtx02, tStr, tStr)
	wRenderParams02 = tRecord(wCtx02, tStr, tStr, tStr)
	wGetParams      = tRecord(tEnum, wResource, tOption(tStr), tStr)
	wListParams     = tRecord(tEnum, wResource, tOption(tStr), tOption(tStr))

	wResString  = tResult(&tStr, &wPluginError)
	wResName01  = tResult(&wObjectName, &wPluginError)
	wResList    = tResult(p(tList(tStr)), &wPluginError)
	wResUnit    = tResult(nil, &tStr)
	wResMutated = tResult(&wMutated, &wPluginError)
	wResNamed   = tResult(&wNamed, &wPluginError)
	wResRend    = tResult(&wRendered, &wPluginError)
	wResGet     = tResult(p(tOption(tStr)), &wReadError)
	wResList2   = tResult(p(tList(tStr)), &wReadError)
)

func eq(t *testing.T, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %d, but the WIT type gives %d", what, got, want)
	}
}

func TestLayoutsFollowTheWIT(t *testing.T) {
	eq(t, "optStrSize", optStrSize, tOption(tStr).size)
	eq(t, "errMsg", errMsg, wPluginError.payload)

	eq(t, "ctxPath", ctxPath, wCtx02.offsets[1])
	eq(t, "ctxDir", ctxDir, wCtx02.offsets[2])
	eq(t, "ctxOwner", ctxOwner, wCtx02.offsets[3])
	eq(t, "ctxValues", ctxValues, wCtx02.offsets[4])
	eq(t, "ctx02Size", ctx02Size, wCtx02.size)
	eq(t, "ctx01 is ctx02 without values", wCtx01.offsets[3], ctxOwner)
	eq(t, "entryValue", entryValue, wEntry.offsets[1])
	eq(t, "entrySize", entrySize, wEntry.size)

	eq(t, "resPayload", resPayload, wResString.payload)
	eq(t, "resStringSize", resStringSize, wResString.size)
	eq(t, "resNameName", resNameName, wResName01.payload+wObjectName.offsets[0])
	eq(t, "resNameNamespace", resNameNamespace, wResName01.payload+wObjectName.offsets[1])
	eq(t, "resNameSize", resNameSize, wResName01.size)
	eq(t, "resListSize", resListSize, wResList.size)
	eq(t, "resUnitErr", resUnitErr, wResUnit.payload)
	eq(t, "resUnitSize", resUnitSize, wResUnit.size)

	for i, off := range []int{infoName, infoVersion, infoDescription, infoSchema, infoExamples, infoReads} {
		eq(t, "plugin-info field", off, wInfo02.offsets[i])
		if i < 5 {
			eq(t, "plugin-info 0.1 field", off, wInfo01.offsets[i])
		}
	}
	eq(t, "info01Size", info01Size, wInfo01.size)
	eq(t, "info02Size", info02Size, wInfo02.size)
	for i, off := range []int{fixName, fixConfig, fixInput, fixExpected, fixReads, fixValues} {
		eq(t, "fixture field", off, wFixture02.offsets[i])
		if i < 4 {
			eq(t, "fixture 0.1 field", off, wFixture01.offsets[i])
		}
	}
	eq(t, "fix01Size", fix01Size, wFixture01.size)
	eq(t, "fix02Size", fix02Size, wFixture02.size)
	eq(t, "resVersion", resVersion, wResource.offsets[1])
	eq(t, "resResource", resResource, wResource.offsets[2])
	eq(t, "resourceSize", resourceSize, wResource.size)
	eq(t, "declResource", declResource, wReadDecl.offsets[1])
	eq(t, "declPurpose", declPurpose, wReadDecl.offsets[2])
	eq(t, "declSize", declSize, wReadDecl.size)
	eq(t, "rfResource", rfResource, wReadFixture.offsets[1])
	eq(t, "rfObjects", rfObjects, wReadFixture.offsets[2])
	eq(t, "rfSize", rfSize, wReadFixture.size)

	eq(t, "repConditions", repConditions, wReport.offsets[1])
	eq(t, "repContext", repContext, wReport.offsets[2])
	eq(t, "reportSize", reportSize, wReport.size)
	eq(t, "crReason", crReason, wCallResult.offsets[1])
	eq(t, "crMessage", crMessage, wCallResult.offsets[2])
	eq(t, "crSize", crSize, wCallResult.size)
	eq(t, "condStatus", condStatus, wCondition.offsets[1])
	eq(t, "condReason", condReason, wCondition.offsets[2])
	eq(t, "condMessage", condMessage, wCondition.offsets[3])
	eq(t, "condSize", condSize, wCondition.size)

	eq(t, "mp02Config", mp02Config, wMutateParams02.offsets[1])
	eq(t, "mp02Object", mp02Object, wMutateParams02.offsets[2])
	eq(t, "mp02Other", mp02Other, wMutateParams02.offsets[3])
	eq(t, "mp02Size", mp02Size, wMutateParams02.size)
	eq(t, "resMutObject", resMutObject, wResMutated.payload+wMutated.offsets[0])
	eq(t, "resMutReport", resMutReport, wResMutated.payload+wMutated.offsets[1])
	eq(t, "resMutSize", resMutSize, wResMutated.size)
	eq(t, "resNamedName", resNamedName, wResNamed.payload+wNamed.offsets[0])
	eq(t, "resNamedNamespace", resNamedNamespace, wResNamed.payload+wObjectName.offsets[1])
	eq(t, "resNamedReport", resNamedReport, wResNamed.payload+wNamed.offsets[1])
	eq(t, "resNamedSize", resNamedSize, wResNamed.size)
	eq(t, "resRendDocs", resRendDocs, wResRend.payload+wRendered.offsets[0])
	eq(t, "resRendReport", resRendReport, wResRend.payload+wRendered.offsets[1])
	eq(t, "resRendSize", resRendSize, wResRend.size)
	eq(t, "rgOptDisc", rgOptDisc, wResGet.payload)
	eq(t, "rgOptString", rgOptString, wResGet.payload+tOption(tStr).payload)
	eq(t, "rgSize", rgSize, wResGet.size)
	eq(t, "rlList", rlList, wResList2.payload)
	eq(t, "rlSize", rlSize, wResList2.size)
	eq(t, "read-error message", errMsg, wReadError.payload)
}

// Functions whose parameters flatten to at most 16 values take them flat;
// mutate of 0.2 (17) takes a pointer. Results of more than one flat value
// go through a return area.
func TestFlatteningFollowsTheWIT(t *testing.T) {
	eq(t, "flatCtx01", flatCtx01, wCtx01.flat)
	eq(t, "flatCtx02", flatCtx02, wCtx02.flat)
	eq(t, "flatMutate01", flatMutate01, wMutateParams01.flat)
	eq(t, "flatName01", flatName01, wNameParams01.flat)
	eq(t, "flatRender01", flatRender01, wRenderParams01.flat)
	eq(t, "flatProject", flatProject, wProjectParams.flat)
	eq(t, "flatName02", flatName02, wNameParams02.flat)
	eq(t, "flatRender02", flatRender02, wRenderParams02.flat)
	eq(t, "flatReadsGet", flatReadsGet, wGetParams.flat)
	eq(t, "flatReadsLst", flatReadsLst, wListParams.flat)
	if wMutateParams02.flat <= 16 {
		t.Errorf("mutate 0.2 flattens to %d values; the glue passes it by pointer", wMutateParams02.flat)
	}
	for name, res := range map[string]ty{"string": wResString, "named": wResNamed, "get": wResGet, "unit": wResUnit} {
		if res.flat <= 1 {
			t.Errorf("result<%s> flattens to %d value: the glue uses a return area", name, res.flat)
		}
	}
}
