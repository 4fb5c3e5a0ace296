package resolver

// Answerer is what decides the names a POI answers to: the reference names
// under which it is a candidate of Lookup (see AnswerNames).
type Answerer struct {
	ID, Type, Name string
	// Receiver is the type a Go method is declared on (Receiver of the
	// POI), "" for any other POI.
	Receiver string
	// Symbol is the POI's symbol, "" when it has none.
	Symbol string
}

// NameKinds selects among the names a POI answers to by what each comes
// from. A publish reports a POI's names of the kinds whose source changed.
type NameKinds uint8

// The kinds of names a POI answers to.
const (
	// ByName is its Name: references read from code, and supplied by name.
	ByName NameKinds = 1 << iota
	// ByReceiver is a Go method's receiver-qualified name (ReceiverName),
	// the key of member calls on values of its type (ReferenceKey).
	ByReceiver
	// ByID is IDPrefix and its id: supplied references by targetId.
	ByID
	// BySymbol is SymbolPrefix and its symbol, when it has one: supplied
	// references by symbol.
	BySymbol
)

// AnswerNames calls add with each name of kinds that a POI a answers to:
// the names by which a reference can resolve to it, so that a publish
// that adds, removes or changes the POI reports them and the references
// to them are resolved again. An import answers to none: no relationship
// targets one (Accepts). It is the one statement of this rule, for the
// publisher (outbox) and the reprocessing worker (worker/resolvefile).
func AnswerNames(a Answerer, kinds NameKinds, add func(string)) {
	if a.Type == TypeImport {
		return
	}
	if kinds&ByName != 0 {
		add(a.Name)
	}
	if kinds&ByReceiver != 0 && a.Receiver != "" {
		add(ReceiverName(a.Receiver, a.Name))
	}
	if kinds&ByID != 0 {
		add(IDPrefix + a.ID)
	}
	if kinds&BySymbol != 0 && a.Symbol != "" {
		add(SymbolPrefix + a.Symbol)
	}
}
