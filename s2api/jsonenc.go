package s2api

import (
	"encoding/base64"
	"strconv"
	"unicode/utf8"
)

// AppendReadBatchJSON appends the JSON form of b (see EncodeReadBatchJSON) to dst without
// reflection: {"records":[{"seq_num","timestamp","headers":[[n,v]…],"body"}…],"tail"?}.
func AppendReadBatchJSON(dst []byte, b *ReadBatch, f Format) []byte {
	dst = append(dst, `{"records":[`...)
	for i := range b.Records {
		r := &b.Records[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"seq_num":`...)
		dst = strconv.AppendUint(dst, r.SeqNum, 10)
		dst = append(dst, `,"timestamp":`...)
		dst = strconv.AppendUint(dst, r.Timestamp, 10)
		dst = append(dst, `,"headers":[`...)
		for j, h := range r.Headers {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '[')
			dst = appendJSONBytes(dst, h.Name, f)
			dst = append(dst, ',')
			dst = appendJSONBytes(dst, h.Value, f)
			dst = append(dst, ']')
		}
		dst = append(dst, `],"body":`...)
		dst = appendJSONBytes(dst, r.Body, f)
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	if b.Tail != nil {
		dst = append(dst, `,"tail":{"seq_num":`...)
		dst = strconv.AppendUint(dst, b.Tail.SeqNum, 10)
		dst = append(dst, `,"timestamp":`...)
		dst = strconv.AppendUint(dst, b.Tail.Timestamp, 10)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// appendJSONBytes appends p as a JSON string: base64, or (raw) as UTF-8 text with invalid
// bytes replaced by U+FFFD, as encoding/json does.
func appendJSONBytes(dst, p []byte, f Format) []byte {
	if f == FormatBase64 {
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, p)
		return append(dst, '"')
	}
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(p); {
		c := p[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, p[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, p[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, p[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, p[start:]...)
	return append(dst, '"')
}
