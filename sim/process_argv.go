package sim

import (
	"errors"
	"fmt"
	"strings"
)

// SplitCommand splits a command line into argv as a POSIX shell splits words, without running one:
// blanks separate words; single quotes keep everything up to the next single quote; double quotes keep
// everything up to the next unescaped double quote, where a backslash escapes only $ ` " \ and a
// newline; elsewhere a backslash keeps the next character. There are no variables, globs,
// redirections or other shell syntax: such characters are kept as they are.
func SplitCommand(s string) ([]string, error) {
	var (
		argv    []string
		word    strings.Builder
		inWord  bool
		quote   rune // 0, '\'' or '"'
		opening int  // where the open quote started, for the error
	)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch quote {
		case '\'':
			if c == '\'' {
				quote = 0
			} else {
				word.WriteRune(c)
			}
			continue
		case '"':
			switch {
			case c == '"':
				quote = 0
			case c == '\\' && i+1 < len(rs) && strings.ContainsRune("$`\"\\\n", rs[i+1]):
				i++
				if rs[i] != '\n' {
					word.WriteRune(rs[i])
				}
			default:
				word.WriteRune(c)
			}
			continue
		}
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				argv = append(argv, word.String())
				word.Reset()
				inWord = false
			}
		case c == '\'' || c == '"':
			quote, opening, inWord = c, i, true
		case c == '\\':
			if i+1 >= len(rs) {
				return nil, errors.New("the command ends with a lone backslash")
			}
			i++
			if rs[i] != '\n' {
				word.WriteRune(rs[i])
				inWord = true
			}
		default:
			word.WriteRune(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("the %c quote at character %d is never closed", quote, opening+1)
	}
	if inWord {
		argv = append(argv, word.String())
	}
	if len(argv) == 0 {
		return nil, errors.New("the command is empty: give the program to run and its arguments, e.g. --exec 'python3 instance.py'")
	}
	return argv, nil
}

// shellQuote quotes s for a shell as one word, so that a replay line can be pasted.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
