package abi

import (
	"syncweave.dev/sdk/go/internal/roles"
	"syncweave.dev/sdk/go/plugin"
)

func noPlugin(world string) error {
	return plugin.Errorf(plugin.Internal, "no plugin is registered: call %s.Register in an init function of the main package", world)
}

// lowerErr stores a plugin-error at off: case byte, then the message.
func lowerErr(m Memory, b []byte, off int, err error) {
	b[off+errCase] = byte(plugin.KindOf(err))
	putString(m, b, off+errMsg, err.Error())
}

func liftCtxFlat(m Memory, p []uint32) *plugin.Context {
	ctx := &plugin.Context{
		ClusterName: liftString(m, p[0], p[1]),
		Direction:   plugin.Direction(p[5]),
		Owner:       liftString(m, p[6], p[7]),
	}
	ctx.ClusterPath, _ = liftOptString(m, p[2], p[3], p[4])
	return ctx
}

func liftValues(m Memory, b []byte, off int) []plugin.ContextValue {
	var values []plugin.ContextValue
	loadList(m, b, off, entrySize, func(e []byte) {
		values = append(values, plugin.ContextValue{
			Key:   loadString(m, e, entryKey),
			Value: loadString(m, e, entryValue),
		})
	})
	return values
}

// liftCtx02Flat lifts a 0.2 context from its 10 flat values.
func liftCtx02Flat(m Memory, p []uint32) *plugin.Context {
	ctx := liftCtxFlat(m, p[:flatCtx01])
	var pair [8]byte
	put32(pair[:], 0, p[8])
	put32(pair[:], 4, p[9])
	ctx.Values = liftValues(m, pair[:], 0)
	return ctx
}

// liftCtx02Mem lifts a 0.2 context stored in b.
func liftCtx02Mem(m Memory, b []byte) *plugin.Context {
	ctx := &plugin.Context{
		ClusterName: loadString(m, b, ctxName),
		Direction:   plugin.Direction(b[ctxDir]),
		Owner:       loadString(m, b, ctxOwner),
	}
	if b[ctxPath] != 0 {
		ctx.ClusterPath = loadString(m, b, ctxPath+4)
	}
	ctx.Values = liftValues(m, b, ctxValues)
	return ctx
}

func lowerReport(m Memory, b []byte, off int, r *plugin.Report) {
	if r == nil {
		r = &plugin.Report{}
	}
	putList(m, b, off+repResults, len(r.Results), crSize, func(i int, e []byte) {
		c := &r.Results[i]
		e[crSeverity] = byte(c.Severity)
		putString(m, e, crReason, c.Reason)
		putString(m, e, crMessage, c.Message)
	})
	putList(m, b, off+repConditions, len(r.Conditions), condSize, func(i int, e []byte) {
		c := &r.Conditions[i]
		putString(m, e, condType, c.Type)
		putString(m, e, condStatus, string(c.Status))
		putString(m, e, condReason, c.Reason)
		putString(m, e, condMessage, c.Message)
	})
	putList(m, b, off+repContext, len(r.ContextValues), entrySize, func(i int, e []byte) {
		putString(m, e, entryKey, r.ContextValues[i].Key)
		putString(m, e, entryValue, r.ContextValues[i].Value)
	})
}

func lowerResource(m Memory, b []byte, off int, r *plugin.Resource) {
	putString(m, b, off+resGroup, r.Group)
	putString(m, b, off+resVersion, r.Version)
	putString(m, b, off+resResource, r.Resource)
}

func describe(h roles.Meta, world string) plugin.Info {
	if h == nil {
		return plugin.Info{Name: "unregistered", Version: "0.0.0", Description: noPlugin(world).Error()}
	}
	return h.Describe()
}

// Describe is meta.describe: returns the address of a plugin-info of the
// contract version (0.2 adds read declarations and examples' reads and
// values).
func Describe(m Memory, h roles.Meta, contract plugin.Contract, world string) uint32 {
	info := describe(h, world)
	v02 := contract == plugin.Contract02
	size, fixSize := info01Size, fix01Size
	if v02 {
		size, fixSize = info02Size, fix02Size
	}
	ret, b := m.Alloc(uint32(size))
	putString(m, b, infoName, info.Name)
	putString(m, b, infoVersion, info.Version)
	putString(m, b, infoDescription, info.Description)
	putOptString(m, b, infoSchema, info.ConfigSchema, info.ConfigSchema != "")
	putList(m, b, infoExamples, len(info.Examples), fixSize, func(i int, e []byte) {
		ex := &info.Examples[i]
		config := ex.Config
		if config == "" {
			config = "null"
		}
		putString(m, e, fixName, ex.Name)
		putString(m, e, fixConfig, config)
		putString(m, e, fixInput, ex.Input)
		putOptString(m, e, fixExpected, ex.Expected, ex.Expected != "")
		if !v02 {
			return
		}
		putList(m, e, fixReads, len(ex.Reads), rfSize, func(j int, r []byte) {
			rf := &ex.Reads[j]
			r[rfSide] = byte(rf.Side)
			lowerResource(m, r, rfResource, &rf.Resource)
			putStrings(m, r, rfObjects, rf.Objects)
		})
		putList(m, e, fixValues, len(ex.Values), entrySize, func(j int, v []byte) {
			putString(m, v, entryKey, ex.Values[j].Key)
			putString(m, v, entryValue, ex.Values[j].Value)
		})
	})
	if v02 {
		putList(m, b, infoReads, len(info.Reads), declSize, func(i int, e []byte) {
			d := &info.Reads[i]
			e[declSide] = byte(d.Side)
			lowerResource(m, e, declResource, &d.Resource)
			putString(m, e, declPurpose, d.Purpose)
		})
	}
	return ret
}

// ValidateConfig is meta.validate-config: result<_, string>.
func ValidateConfig(m Memory, h roles.Meta, world string, cfgPtr, cfgLen uint32) uint32 {
	config := liftString(m, cfgPtr, cfgLen)
	ret, b := m.Alloc(resUnitSize)
	var err error
	if h == nil {
		err = noPlugin(world)
	} else {
		err = h.ValidateConfig(config)
	}
	if err != nil {
		b[resDisc] = 1
		putString(m, b, resUnitErr, err.Error())
	}
	return ret
}

// Mutate01 is mutation@0.1.0.mutate from its 15 flat parameters.
func Mutate01(m Memory, h roles.Mutator, p []uint32) uint32 {
	ctx := liftCtxFlat(m, p[:flatCtx01])
	config := liftString(m, p[8], p[9])
	object := liftString(m, p[10], p[11])
	other, hasOther := liftOptString(m, p[12], p[13], p[14])
	var out string
	var err error
	if h == nil {
		err = noPlugin("mutator")
	} else {
		var o *string
		if hasOther {
			o = &other
		}
		out, _, err = h.MutateJSON(ctx, config, object, o)
	}
	return lowerStringResult(m, out, err)
}

func lowerStringResult(m Memory, out string, err error) uint32 {
	ret, b := m.Alloc(resStringSize)
	if err != nil {
		b[resDisc] = 1
		lowerErr(m, b, resPayload, err)
	} else {
		putString(m, b, resPayload, out)
	}
	return ret
}

// Name01 is naming@0.1.0.name from its 12 flat parameters.
func Name01(m Memory, h roles.Namer, p []uint32) uint32 {
	ctx := liftCtxFlat(m, p[:flatCtx01])
	config := liftString(m, p[8], p[9])
	object := liftString(m, p[10], p[11])
	var name plugin.ObjectName
	var err error
	if h == nil {
		err = noPlugin("namer")
	} else {
		name, _, err = h.NameJSON(ctx, config, object)
	}
	ret, b := m.Alloc(resNameSize)
	if err != nil {
		b[resDisc] = 1
		lowerErr(m, b, resPayload, err)
	} else {
		putString(m, b, resNameName, name.Name)
		putOptString(m, b, resNameNamespace, name.Namespace, name.Namespace != "")
	}
	return ret
}

// Project is projection.project (the same in 0.1 and 0.2) from its 4 flat
// parameters.
func Project(m Memory, h roles.Projector, p []uint32) uint32 {
	config := liftString(m, p[0], p[1])
	crd := liftString(m, p[2], p[3])
	var out string
	var err error
	if h == nil {
		err = noPlugin("projector")
	} else {
		out, err = h.ProjectJSON(config, crd)
	}
	return lowerStringResult(m, out, err)
}

// Render01 is rendering@0.1.0.render from its 14 flat parameters.
func Render01(m Memory, h roles.Renderer, p []uint32) uint32 {
	ctx := liftCtxFlat(m, p[:flatCtx01])
	config := liftString(m, p[8], p[9])
	template := liftString(m, p[10], p[11])
	values := liftString(m, p[12], p[13])
	var docs []string
	var err error
	if h == nil {
		err = noPlugin("renderer")
	} else {
		docs, _, err = h.RenderJSON(ctx, config, template, values)
	}
	ret, b := m.Alloc(resListSize)
	if err != nil {
		b[resDisc] = 1
		lowerErr(m, b, resPayload, err)
	} else {
		putStrings(m, b, resPayload, docs)
	}
	return ret
}

// Mutate02 is mutation@0.2.0.mutate: its parameters flatten to 17 values,
// so the host stores them in memory it allocated and passes the address.
func Mutate02(m Memory, h roles.Mutator, params uint32, reads plugin.Reader) uint32 {
	pb := m.Bytes(params, mp02Size)
	ctx := liftCtx02Mem(m, pb[mp02Ctx:mp02Ctx+ctx02Size])
	ctx.Reads = reads
	config := loadString(m, pb, mp02Config)
	object := loadString(m, pb, mp02Object)
	var o *string
	if pb[mp02Other] != 0 {
		other := loadString(m, pb, mp02Other+4)
		o = &other
	}
	m.Free(params)
	var out string
	var report *plugin.Report
	var err error
	if h == nil {
		err = noPlugin("mutator")
	} else {
		out, report, err = h.MutateJSON(ctx, config, object, o)
	}
	ret, b := m.Alloc(resMutSize)
	if err != nil {
		b[resDisc] = 1
		lowerErr(m, b, resPayload, err)
	} else {
		putString(m, b, resMutObject, out)
		lowerReport(m, b, resMutReport, report)
	}
	return ret
}

// Name02 is naming@0.2.0.name from its 14 flat parameters.
func Name02(m Memory, h roles.Namer, p []uint32, reads plugin.Reader) uint32 {
	ctx := liftCtx02Flat(m, p[:flatCtx02])
	ctx.Reads = reads
	config := liftString(m, p[10], p[11])
	object := liftString(m, p[12], p[13])
	var name plugin.ObjectName
	var report *plugin.Report
	var err error
	if h == nil {
		err = noPlugin("namer")
	} else {
		name, report, err = h.NameJSON(ctx, config, object)
	}
	ret, b := m.Alloc(resNamedSize)
	if err != nil {
		b[resDisc] = 1
		lowerErr(m, b, resPayload, err)
	} else {
		putString(m, b, resNamedName, name.Name)
		putOptString(m, b, resNamedNamespace, name.Namespace, name.Namespace != "")
		lowerReport(m, b, resNamedReport, report)
	}
	return ret
}

// Render02 is rendering@0.2.0.render from its 16 flat parameters.
func Render02(m Memory, h roles.Renderer, p []uint32, reads plugin.Reader) uint32 {
	ctx := liftCtx02Flat(m, p[:flatCtx02])
	ctx.Reads = reads
	config := liftString(m, p[10], p[11])
	template := liftString(m, p[12], p[13])
	values := liftString(m, p[14], p[15])
	var docs []string
	var report *plugin.Report
	var err error
	if h == nil {
		err = noPlugin("renderer")
	} else {
		docs, report, err = h.RenderJSON(ctx, config, template, values)
	}
	ret, b := m.Alloc(resRendSize)
	if err != nil {
		b[resDisc] = 1
		lowerErr(m, b, resPayload, err)
	} else {
		putStrings(m, b, resRendDocs, docs)
		lowerReport(m, b, resRendReport, report)
	}
	return ret
}
