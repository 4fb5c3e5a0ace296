package resolver

import (
	"context"
	"slices"
	"strings"
)

// extractCalls adds the CALLS references of a function, method or class POI.
func extractCalls(ctx context.Context, p POI, refs *refSet) error {
	_, err := scanCalls(ctx, p, func(name string, _ int) { refs.add(Calls, name) })
	return err
}

// CallSite is a call relay's lexical rule finds in a POI's code: the name
// it references (as Extract returns it) and where the called name starts
// in RawCode, as a 0-based line and a byte column on that line.
type CallSite struct {
	Name         string
	Line, Column int
}

// CallSites returns the calls Extract would read from p's RawCode (p's
// References are ignored), each with where it is, in the order of their
// positions; a name called at two places is there twice. A class's
// methods' calls are not its own (as in Extract). It runs in time linear
// in len(p.RawCode) and returns an error wrapping ctx.Err() when ctx is
// done.
func CallSites(ctx context.Context, p POI) ([]CallSite, error) {
	if p.Type != TypeFunction && p.Type != TypeMethod && p.Type != TypeClass {
		return nil, nil
	}
	type at struct {
		name string
		off  int
	}
	var found []at
	code, err := scanCalls(ctx, p, func(name string, off int) {
		if name != "" && len(name) <= MaxNameBytes {
			found = append(found, at{name, off})
		}
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(found, func(a, b at) int { return a.off - b.off })
	sites := make([]CallSite, 0, len(found))
	line, lineStart, pos := 0, 0, 0
	for _, f := range found {
		// The scanned code keeps RawCode's line structure and the columns
		// of the lines it keeps, so a line and column in it are RawCode's.
		for ; pos < f.off && pos < len(code); pos++ {
			if code[pos] == '\n' {
				line, lineStart = line+1, pos+1
			}
		}
		sites = append(sites, CallSite{Name: f.name, Line: line, Column: f.off - lineStart})
	}
	return sites, nil
}

// scanCalls runs the call scanner over p's own code, calling add with each
// call's reference name and the byte offset of its called name in the own
// code, which it returns.
func scanCalls(ctx context.Context, p POI, add func(name string, off int)) (string, error) {
	lang := languageOf(p.FilePath)
	code := p.RawCode
	switch {
	case lang == langPython:
		code = pythonOwnCode(code)
	case lang == langJS && p.Type == TypeClass:
		code = jsOwnCode(ctx, code)
	}
	z := newTokenizer(ctx, code)
	z.privateNames = lang == langJS
	z.regexLiterals = lang == langJS
	s := callScanner{
		z:          z,
		self:       simpleName(p.Name),
		headerOpen: true,
		kw:         keywordsOf(lang),
		add:        add,
	}
	if lang == langGo {
		s.goScope = &goScope{}
	}
	s.run()
	return code, scanError(s.z, p, "calls")
}

// simpleName returns the last segment of a possibly qualified name
// ("Calc.add", "Calc::add", "Calc#add" -> "add").
func simpleName(name string) string {
	if i := strings.LastIndexAny(name, ".:#/"); i >= 0 {
		return name[i+1:]
	}
	return name
}

// callContext is what a name followed by "(" is, judged by the token before it.
type callContext int

const (
	ctxCall      callContext = iota // a call
	ctxDecl                         // a declaration (`int add(`, `async foo(`)
	ctxStatement                    // a call, or a method definition if the ")" is followed by "{", ":" or throws
	ctxList                         // like ctxStatement, but only "{" makes it a definition
)

// pendingCall is a name followed by "(" at the start of a statement whose fate
// is decided by the token after its matching ")".
type pendingCall struct {
	name    string
	at      int  // the offset of its name
	depth   int  // paren depth outside its "("
	colonOK bool // whether "):" marks a definition (TypeScript return type)
}

// callScanner finds calls in one pass over the tokens of a POI's code.
type callScanner struct {
	z    *tokenizer
	self string                     // the POI's own name, excluded once in the header
	add  func(name string, off int) // a call's reference and its name's offset
	kw   map[string]kwKind          // the language's keywords

	// goScope, for Go, tracks declarations and qualifies references.
	goScope *goScope

	prev token          // the previous token; tokEOF at the start of input
	hist [histLen]token // the previous tokens, hist[0] == prev

	// The header is the code before the body starts: before the first "{",
	// "=>", ":" or ";" outside parentheses and brackets.
	headerOpen  bool
	headerDepth int
	selfSkipped bool

	defPending bool // after function/def/func/class…: the next name is defined
	newChain   bool // after new: the qualified name being constructed

	parenDepth int
	pending    []pendingCall
	closing    pendingCall // the pending call whose ")" was the previous token
	hasClosing bool

	// For Go: the references of the calls whose "(" is open, innermost
	// last, and of the call whose ")" was read last (closed, at token
	// closedAt), so that a member call on a call's value (`x.M().N(`) is
	// the derived reference {x.M}.N.
	tok      int
	open     []openCall
	closed   string
	closedAt int
}

// openCall is a Go call whose argument list is open: its reference ("" for
// no reference) and the paren depth outside its "(".
type openCall struct {
	ref   string
	depth int
}

// run scans the whole input.
func (s *callScanner) run() {
	for {
		t := s.z.next()
		s.tok++
		if s.hasClosing {
			s.hasClosing = false
			if !opensBody(t, s.closing.colonOK) {
				s.add(s.closing.name, s.closing.at)
			}
		}
		if t.kind == tokEOF {
			for _, p := range s.pending { // unbalanced: a call cut short
				s.add(p.name, p.at)
			}
			return
		}
		s.trackHeader(t)
		if s.goScope != nil {
			s.goScope.observe(t, s.parenDepth, s.z, &s.hist)
		}
		switch t.kind {
		case tokIdent:
			s.ident(t)
		case tokPunct:
			s.punct(t)
		}
		s.updateState(t)
		s.prev = t
		copy(s.hist[1:], s.hist[:len(s.hist)-1])
		s.hist[0] = t
	}
}

// opensBody reports whether t, following the ")" of `name(…)`, starts a body,
// making `name(…)` a method definition rather than a call.
func opensBody(t token, colonOK bool) bool {
	return t.isPunct("{") || colonOK && t.isPunct(":") || t.isIdent("throws")
}

// trackHeader closes the header at the first body opener outside parentheses.
func (s *callScanner) trackHeader(t token) {
	if !s.headerOpen || t.kind != tokPunct {
		return
	}
	switch t.text {
	case "(", "[":
		s.headerDepth++
	case ")", "]":
		s.headerDepth = max(s.headerDepth-1, 0)
	case "{", "=>", ":", ";":
		if s.headerDepth == 0 {
			s.headerOpen = false
		}
	}
}

// ident judges a name: a call, a definition, a keyword, or the POI's own name.
func (s *callScanner) ident(t token) {
	if s.headerOpen && !s.selfSkipped && s.self != "" && t.text == s.self {
		s.selfSkipped = true
		return
	}
	if nx := s.z.peek(); nx.nlBefore || !nx.isPunct("(") && !s.goInstantiation(t) {
		return
	}
	switch {
	case s.newChain, s.defPending:
		return
	case isMemberAccess(s.prev):
		if s.goScope != nil {
			ref := s.goScope.member(t.text, &s.hist)
			if s.hist[1].isPunct(")") && s.closedAt == s.tok-2 {
				// x.M().N(: a method of the type of M's result, as for
				// v := x.M(); v.N( (derivedExpr: a pinned call, three deep)
				if x := derivedExpr(s.closed); x != "" {
					ref = GoRef{Kind: GoDerived, Of: x, Name: t.text}.String()
				}
			}
			s.openCall(ref)
			s.addRef(ref, t.start)
			return
		}
		s.add(t.text, t.start)
		return
	case s.kw[t.text] != kwNone:
		return
	}
	c := s.context(t)
	if s.goScope != nil && (c == ctxStatement || c == ctxList) {
		c = ctxCall // Go defines methods only after func: `if x := f(); g(y) {` calls g
	}
	switch c {
	case ctxCall:
		if s.goScope != nil {
			ref := s.goScope.plain(t.text)
			s.openCall(ref)
			s.addRef(ref, t.start)
			return
		}
		s.add(t.text, t.start)
	case ctxStatement:
		s.pending = append(s.pending, pendingCall{name: t.text, at: t.start, depth: s.parenDepth, colonOK: true})
	case ctxList:
		s.pending = append(s.pending, pendingCall{name: t.text, at: t.start, depth: s.parenDepth})
	case ctxDecl: // a declared name, not a call
	}
}

// goInstantiation reports whether the Go name t is a generic function
// explicitly instantiated and called: `f[T](x)`, `q.F[K, V](x)`. A name
// indexed by a local (`fns[i](x)`) or a member of a local (`s.fns[k](x)`,
// methods have no type parameters) is an index expression.
func (s *callScanner) goInstantiation(t token) bool {
	if s.goScope == nil || !s.z.peek().isPunct("[") {
		return false
	}
	if isMemberAccess(s.prev) {
		q := s.hist[1]
		if q.kind != tokIdent || isMemberAccess(s.hist[2]) || s.goScope.isLocal(q.text) {
			return false
		}
	}
	return s.goScope.instantiationAt(s.z, 0) > 0
}

// openCall records a Go call whose "(" is the next token, with its
// reference, so that its ")" can tell what value it closes.
func (s *callScanner) openCall(ref string) {
	s.open = append(s.open, openCall{ref: ref, depth: s.parenDepth})
	if ref != "" {
		s.goScope.callOpened(s.parenDepth)
	}
}

// addRef adds a reference unless name is empty (not a reference).
func (s *callScanner) addRef(name string, off int) {
	if name != "" {
		s.add(name, off)
	}
}

// isMemberAccess reports whether t makes the next name a member: ".", "->", "::".
func isMemberAccess(t token) bool {
	return t.isPunct(".") || t.isPunct("->") || t.isPunct("::")
}

// context judges a name followed by "(" by the token before it.
func (s *callScanner) context(t token) callContext {
	p := s.prev
	switch p.kind {
	case tokEOF:
		return ctxStatement
	case tokIdent:
		if t.nlBefore {
			return ctxStatement
		}
		if k := s.kw[p.text]; k != kwNone && k != kwModifier {
			return ctxCall // return foo(), await foo(), not foo()
		}
		return ctxDecl // int add(, String name(, async foo(, get value(
	case tokNumber, tokString:
		if t.nlBefore {
			return ctxStatement
		}
	case tokPunct:
		switch p.text {
		case "{", "}", ";":
			return ctxStatement
		case ",":
			return ctxList
		case ")", "]":
			if t.nlBefore {
				return ctxStatement
			}
			if p.text == "]" {
				return ctxDecl // int[] foo(, Go []byte(s)
			}
		}
	}
	return ctxCall
}

// punct tracks parentheses and settles a pending call at its ")".
func (s *callScanner) punct(t token) {
	switch t.text {
	case "(":
		s.parenDepth++
	case ")":
		if s.parenDepth == 0 {
			return
		}
		s.parenDepth--
		if n := len(s.open); n > 0 && s.open[n-1].depth == s.parenDepth {
			s.closed, s.closedAt = s.open[n-1].ref, s.tok
			s.open = s.open[:n-1]
			s.goScope.callClosed(s.closed, s.parenDepth, s.z.peek(), s.z.peekAt(1), s.z.peekAt(2))
		}
		if n := len(s.pending); n > 0 && s.pending[n-1].depth == s.parenDepth {
			s.closing, s.hasClosing = s.pending[n-1], true
			s.pending = s.pending[:n-1]
		}
	}
}

// updateState tracks definition keywords and new-expressions after token t.
func (s *callScanner) updateState(t token) {
	if t.kind == tokIdent {
		switch s.kw[t.text] {
		case kwDefine:
			s.defPending, s.newChain = true, false
		case kwNew:
			s.defPending, s.newChain = false, true
		default:
			s.defPending = false // the defined name was this one
		}
		return
	}
	if t.isPunct("*") && s.defPending { // function* gen(
		return
	}
	s.defPending = false
	if !t.isPunct(".") {
		s.newChain = false
	}
}
