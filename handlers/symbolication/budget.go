package symbolication

import "context"

// Budget is what one resolution request may hold of the files it parsed,
// and its context, passed to every engine call: each parsed file the
// request keeps (a map, a mapping, an original source, a module's
// resolver) is charged at what it holds in memory, as the parsers measure
// it (sourcemap.Map.Size, proguard.Mapping.Size, dif.Resolver.Size, each
// held to the heap's own count by a test), never at its stored size, and
// a parse is given what is left as its bound, so that it stops before
// allocating past it. The engines stop between frames and files once the
// context ends (the client left). A Budget is used by one request's
// goroutine.
type Budget struct {
	ctx  context.Context
	max  int64
	held int64
}

// NewBudget returns the budget of max bytes of a request whose context is
// ctx.
func NewBudget(ctx context.Context, max int64) *Budget {
	return &Budget{ctx: ctx, max: max}
}

// Charge counts n more bytes held: a *LimitError of HeldBytes, counting
// nothing, when they would take the request past its budget.
func (b *Budget) Charge(n int64) error {
	if n > b.max-b.held {
		return b.Spent()
	}
	b.held += n
	return nil
}

// SpendAll marks the budget spent: whatever the request would hold next
// is refused. An engine calls it once a file alone would take the request
// past its budget, so that it parses no more.
func (b *Budget) SpendAll() { b.held = b.max }

// Left is the bytes the request may still hold.
func (b *Budget) Left() int64 { return b.max - b.held }

// Held is the bytes charged.
func (b *Budget) Held() int64 { return b.held }

// Spent is the error of a request past its budget.
func (b *Budget) Spent() error { return &LimitError{Limit: HeldBytes, Max: b.max} }

// Err is the error of the request's context: non-nil once the client left
// or its deadline passed, when the engines stop.
func (b *Budget) Err() error { return b.ctx.Err() }
