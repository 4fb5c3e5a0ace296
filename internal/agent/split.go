// Package agent runs a MapReduce agent: one command per work item, with the
// item's JSON on stdin, in a fresh working directory per attempt, its output
// in a log file, killed with its whole process group at the deadline, and its
// outcome classified from what happened.
//
// The agent command is never given to a shell. Split turns the --agent
// string into argv once; item data reaches the agent only on stdin and in
// RELAY_* environment variables, so no item can inject a command. Operators
// who want shell features write them explicitly: --agent "sh -c '...'".
package agent

import (
	"errors"
	"fmt"
	"strings"
)

// Split splits a command line into argv with a small subset of POSIX shell
// word rules, and nothing else:
//
//   - unquoted blanks (space, tab, newline) separate words;
//   - '...' is literal;
//   - "..." is literal except that a backslash escapes " \ $ ` and a
//     newline (which it removes);
//   - outside quotes a backslash makes the next character literal;
//   - ” and "" make an empty word.
//
// No expansion of any kind happens: no variables, globs, ~ or command
// substitution. So that a command written for a shell is not silently run
// differently, an unquoted | & ; < > ( ) $ ` or a # starting a word is an
// error that says to quote it or use sh -c.
func Split(command string) ([]string, error) {
	var (
		argv    []string
		word    strings.Builder
		inWord  bool
		runes   = []rune(command)
		closing = func(q rune, from int) error {
			return fmt.Errorf("agent command: unterminated %c quote starting at offset %d", q, from)
		}
	)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if inWord {
				argv = append(argv, word.String())
				word.Reset()
				inWord = false
			}
		case r == '\'':
			start := i
			inWord = true
			for i++; i < len(runes) && runes[i] != '\''; i++ {
				word.WriteRune(runes[i])
			}
			if i >= len(runes) {
				return nil, closing('\'', start)
			}
		case r == '"':
			start := i
			inWord = true
			for i++; i < len(runes) && runes[i] != '"'; i++ {
				if runes[i] == '\\' && i+1 < len(runes) && strings.ContainsRune("\"\\$`\n", runes[i+1]) {
					i++
					if runes[i] == '\n' {
						continue
					}
				}
				word.WriteRune(runes[i])
			}
			if i >= len(runes) {
				return nil, closing('"', start)
			}
		case r == '\\':
			if i+1 >= len(runes) {
				return nil, errors.New("agent command: trailing backslash")
			}
			i++
			if runes[i] != '\n' {
				word.WriteRune(runes[i])
				inWord = true
			}
		case strings.ContainsRune("|&;<>()$`", r) || (r == '#' && !inWord):
			return nil, fmt.Errorf("agent command: unquoted %q at offset %d: relay runs the agent without a shell; "+
				"quote it, or write --agent \"sh -c '...'\"", r, i)
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		argv = append(argv, word.String())
	}
	if len(argv) == 0 {
		return nil, errors.New("agent command is empty")
	}
	return argv, nil
}

// Join is the inverse of Split: it quotes each word that needs it, so that
// Split(Join(argv)) returns argv.
func Join(argv []string) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		words[i] = quoteWord(w)
	}
	return strings.Join(words, " ")
}

func quoteWord(w string) string {
	if w == "" {
		return "''"
	}
	safe := true
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./:=@%+,", r)) {
			safe = false
			break
		}
	}
	if safe {
		return w
	}
	// '...' is literal; a single quote is closed, escaped and reopened.
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
