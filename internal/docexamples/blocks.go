package docexamples

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// Block is one fenced code block of a Markdown file.
type Block struct {
	// File and Line (1-based, of the opening fence) say where it is.
	File string
	Line int
	// Lang is the fence's info string's first word ("sql", "sh"; "" for
	// none).
	Lang string
	// Text is the block's content, its lines' fence indentation removed.
	Text string
	// NotRun is the reason a <!-- not-run: ... --> marker gives, "" when
	// the block has none.
	NotRun string
}

// Kind says what is done with a block of a language.
type Kind int

const (
	// Data is output or data (json, yaml, ini, text, no language): never
	// run, no marker needed.
	Data Kind = iota
	// SQL runs through psql.
	SQL
	// Shell runs its relay commands.
	Shell
	// Python runs as a program with Debian's python3 and psycopg 3.
	Python
	// TypeScript is type-checked and compiled with tsc (strict, as an ES
	// module), then run with Node and node-postgres.
	TypeScript
	// Java runs as a single-file program (java File.java) with the
	// PostgreSQL JDBC driver on its class path.
	Java
	// Pasted is code a reader pastes that no test runs: it needs a
	// not-run marker.
	Pasted
)

// KindOf is what is done with a block of language lang.
func KindOf(lang string) Kind {
	switch lang {
	case "sql":
		return SQL
	case "sh", "bash", "shell", "console":
		return Shell
	case "python", "py":
		return Python
	case "ts", "typescript":
		return TypeScript
	case "java":
		return Java
	case "js", "javascript", "go":
		return Pasted
	default:
		return Data
	}
}

func (b Block) String() string {
	return fmt.Sprintf("%s:%d (%s)", b.File, b.Line, cmpOr(b.Lang, "no language"))
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

var (
	fenceRE  = regexp.MustCompile("^( *)(```+)\\s*([^`\\s]*)")
	markerRE = regexp.MustCompile(`^\s*<!--\s*not-run:\s*(.*?)\s*-->\s*$`)
)

// Parse returns the fenced code blocks of the Markdown text doc, read from
// file. A marker is the last non-blank line before a block's fence; a
// marker with no reason is an error, as is a fence never closed.
func Parse(file string, doc []byte) ([]Block, error) {
	var (
		out      []Block
		open     *Block
		fence    string
		indent   int
		body     strings.Builder
		lastText string // the last non-blank line outside blocks
	)
	sc := bufio.NewScanner(bytes.NewReader(doc))
	sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if open != nil {
			trimmed := strings.TrimLeft(line, " ")
			if strings.HasPrefix(trimmed, fence) && strings.TrimSpace(strings.TrimLeft(trimmed, "`")) == "" {
				open.Text = body.String()
				out = append(out, *open)
				open, lastText = nil, ""
				continue
			}
			body.WriteString(strings.TrimPrefix(line, strings.Repeat(" ", indent)))
			body.WriteByte('\n')
			continue
		}
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			open = &Block{File: file, Line: n, Lang: strings.ToLower(m[3])}
			fence, indent = m[2], len(m[1])
			body.Reset()
			if mm := markerRE.FindStringSubmatch(lastText); mm != nil {
				if mm[1] == "" {
					return nil, fmt.Errorf("%s:%d: a not-run marker must give its reason", file, n-1)
				}
				open.NotRun = mm[1]
			}
			continue
		}
		if strings.TrimSpace(line) != "" {
			lastText = line
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("error reading %s: %w", file, err)
	}
	if open != nil {
		return nil, fmt.Errorf("%s:%d: the code block is never closed", file, open.Line)
	}
	return out, nil
}

// Command is one command of a shell block: its words, as the shell would
// split them.
type Command struct {
	Line  int // within the block, 1-based
	Words []string
}

// Commands splits a shell block into commands: one per line (a trailing
// backslash continues it), '#' comments dropped, '&&' separating commands
// (each runs only if the one before succeeded, which is how they are run),
// words split on blanks with single and double quotes. Anything more of
// the shell (pipes, redirections, variables, ';', '||') is an error: such
// a block needs a not-run marker.
func Commands(text string) ([]Command, error) {
	var out []Command
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		start := i + 1
		line := lines[i]
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, `\`) + " " + lines[i]
		}
		var words []string
		var cur strings.Builder
		inWord := false
		flush := func() {
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		}
		end := func() {
			flush()
			if len(words) > 0 {
				out = append(out, Command{Line: start, Words: words})
			}
			words = nil
		}
		for j := 0; j < len(line); j++ {
			c := line[j]
			switch {
			case c == ' ' || c == '\t':
				flush()
			case c == '#' && !inWord:
				j = len(line)
			case c == '\'' || c == '"':
				k := strings.IndexByte(line[j+1:], c)
				if k < 0 {
					return nil, fmt.Errorf("line %d: unterminated quote", start)
				}
				quoted := line[j+1 : j+1+k]
				if c == '"' && strings.ContainsAny(quoted, "$`\\") {
					return nil, fmt.Errorf("line %d: %q needs a shell", start, quoted)
				}
				cur.WriteString(quoted)
				inWord = true
				j += k + 1
			case c == '&' && j+1 < len(line) && line[j+1] == '&' && !inWord:
				end()
				j++
			case strings.IndexByte("|;<>$`()*?[]{}~\\&", c) >= 0:
				return nil, fmt.Errorf("line %d: %q needs a shell", start, string(c))
			default:
				cur.WriteByte(c)
				inWord = true
			}
		}
		end()
	}
	return out, nil
}
