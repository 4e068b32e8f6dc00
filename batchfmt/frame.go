package batchfmt

import "encoding/binary"

// Record frames: their sizes, and their writing into a buffer the caller has sized with
// recordSize (see the package doc for the layout).

// recordSize returns r's metered size, the size of its frame, and whether r is shaped as a
// command record (it then still needs Validate). A metered size beyond the 3-byte field
// (impossible in a valid append, which the caller checks) is sized as if it fitted.
func recordSize(r *Record) (metered, wire int, cmd bool) {
	metered = 8 + 2*len(r.Headers) + len(r.Body)
	wire = lenSize(len(r.Headers)) + len(r.Body)
	for i := range r.Headers {
		h := &r.Headers[i]
		metered += len(h.Name) + len(h.Value)
		wire += lenSize(len(h.Name)) + len(h.Name) + lenSize(len(h.Value)) + len(h.Value)
		cmd = cmd || len(h.Name) == 0
	}
	wire += 1 + varlenSize(metered)
	if r.HasTimestamp {
		wire += 8
	}
	return metered, wire, cmd
}

// putFrame writes r's frame at b[o:] and returns the offset after it and r's metered size.
// The caller sized b with recordSize; ok is false if r no longer fits (it changed since),
// and b is then partly written. The metered size must fit in 3 bytes, as the caller's check
// of the append's size guarantees (a larger one is written clamped).
func putFrame(b []byte, o int, r *Record) (next, metered int, ok bool) {
	hs, body, ts := r.Headers, r.Body, r.HasTimestamp
	m := 8 + 2*len(hs) + len(body)
	cmd := false
	for i := range hs {
		h := &hs[i]
		m += len(h.Name) + len(h.Value)
		cmd = cmd || len(h.Name) == 0
	}
	v := min(m, 1<<24-1)
	magic, varlen := frameLead(v, cmd, ts)
	lead := 1 + varlen + lenSize(len(hs))
	if ts {
		lead += 8
	}
	if len(b)-o < lead {
		return o, m, false
	}
	b[o] = magic
	switch varlen {
	case 1:
		b[o+1] = byte(v)
	case 2:
		b[o+1], b[o+2] = byte(v>>8), byte(v)
	default:
		b[o+1], b[o+2], b[o+3] = byte(v>>16), byte(v>>8), byte(v)
	}
	o += 1 + varlen
	if ts {
		binary.BigEndian.PutUint64(b[o:], r.Timestamp)
		o += 8
	}
	o = putLen(b, o, len(hs))
	for i := range hs {
		name, value := hs[i].Name, hs[i].Value
		if len(b)-o < lenSize(len(name))+len(name)+lenSize(len(value))+len(value) {
			return o, m, false
		}
		o = putLen(b, o, len(name))
		o += copy(b[o:], name)
		o = putLen(b, o, len(value))
		o += copy(b[o:], value)
	}
	if len(b)-o < len(body) {
		return o, m, false
	}
	return o + copy(b[o:], body), m, true
}

// frameLead returns a record frame's magic byte and the length of its metered-size field,
// for the metered size m (at most 3 bytes' worth: larger values are sized as 3 bytes).
func frameLead(m int, cmd, ts bool) (magic byte, varlen int) {
	magic = recTypeEnvelope
	if cmd {
		magic = recTypeCommand
	}
	varlen = varlenSize(m)
	magic |= byte(varlen-1) << recVarlenShift
	if ts {
		magic |= recHasTimestamp
	}
	return magic, varlen
}

// varlenSize is the size of the metered-size field for m: 1, 2 or 3 bytes.
func varlenSize(m int) int {
	switch {
	case m < 1<<8:
		return 1
	case m < 1<<16:
		return 2
	}
	return 3
}

// lenSize is the size of a length field for n: 2 bytes, or 6 with the escape.
func lenSize(n int) int {
	if n < lenEscape {
		return 2
	}
	return 6
}

// putLen writes n at b[o:] as 2 bytes, or as the escape 0xFFFF and 4 bytes when n >= 0xFFFF,
// and returns the offset after it.
func putLen(b []byte, o, n int) int {
	if n < lenEscape {
		b[o], b[o+1] = byte(n>>8), byte(n)
		return o + 2
	}
	b[o], b[o+1] = 0xFF, 0xFF
	binary.BigEndian.PutUint32(b[o+2:], uint32(n))
	return o + 6
}
