package resp

import (
	"bytes"
	"fmt"
)

// inline reads an inline command: one line (LF-terminated, an optional CR before the LF dropped),
// split into arguments as Redis splits it. An empty line is skipped, as Redis skips it.
func (r *Reader) inline() (Value, bool, bool) {
	rest := r.buf[r.off:]
	window := rest
	if len(window) > r.lim.MaxInline+1 {
		window = window[:r.lim.MaxInline+1]
	}
	i := bytes.IndexByte(window, '\n')
	if i < 0 {
		if len(rest) > r.lim.MaxInline {
			r.fail(0, "inline command longer than %d bytes (Limits.MaxInline)", r.lim.MaxInline)
		}
		return Value{}, false, false
	}
	line := bytes.TrimSuffix(rest[:i], []byte{'\r'})
	args, err := splitArgs(line)
	if err != nil {
		r.fail(0, "inline command %q: %v", line, err)
		return Value{}, false, false
	}
	if len(args) == 0 {
		r.skip(i + 1)
		return Value{}, false, true
	}
	r.consume(i + 1)
	v := Value{Kind: Array, Elems: make([]Value, len(args))}
	for k, a := range args {
		v.Elems[k] = Value{Kind: BulkString, Str: a}
	}
	return v, true, true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// splitArgs splits an inline command line the way Redis does (sdssplitargs): arguments separated by
// white space; "double quotes" with \n \r \t \b \a \\ \" and \xHH escapes; 'single quotes' with \'
// only. A closing quote must be followed by white space or the end of the line.
func splitArgs(line []byte) ([]string, error) {
	var args []string
	p := 0
	for {
		for p < len(line) && isSpace(line[p]) {
			p++
		}
		if p == len(line) {
			return args, nil
		}
		var cur []byte
		inDouble, inSingle := false, false
		for done := false; !done; {
			switch {
			case inDouble:
				switch {
				case p >= len(line):
					return nil, fmt.Errorf("unbalanced quotes")
				case line[p] == '\\' && p+3 < len(line) && line[p+1] == 'x':
					hi, ok1 := unhex(line[p+2])
					lo, ok2 := unhex(line[p+3])
					if ok1 && ok2 {
						cur = append(cur, hi<<4|lo)
						p += 3
						break
					}
					cur = append(cur, 'x')
					p++
				case line[p] == '\\' && p+1 < len(line):
					p++
					c := line[p]
					switch c {
					case 'n':
						c = '\n'
					case 'r':
						c = '\r'
					case 't':
						c = '\t'
					case 'b':
						c = '\b'
					case 'a':
						c = '\a'
					}
					cur = append(cur, c)
				case line[p] == '"':
					if p+1 < len(line) && !isSpace(line[p+1]) {
						return nil, fmt.Errorf("closing quote must be followed by a space")
					}
					done = true
				default:
					cur = append(cur, line[p])
				}
			case inSingle:
				switch {
				case p >= len(line):
					return nil, fmt.Errorf("unbalanced quotes")
				case line[p] == '\\' && p+1 < len(line) && line[p+1] == '\'':
					p++
					cur = append(cur, '\'')
				case line[p] == '\'':
					if p+1 < len(line) && !isSpace(line[p+1]) {
						return nil, fmt.Errorf("closing quote must be followed by a space")
					}
					done = true
				default:
					cur = append(cur, line[p])
				}
			default:
				switch {
				case p >= len(line) || isSpace(line[p]):
					done = true
				case line[p] == '"':
					inDouble = true
				case line[p] == '\'':
					inSingle = true
				default:
					cur = append(cur, line[p])
				}
			}
			if p < len(line) {
				p++
			}
		}
		args = append(args, string(cur))
	}
}
