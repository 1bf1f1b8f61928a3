package handlers

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"errata/handlers/symbolication"
)

// TestAnswerLimitIs422: an answer past symbolication.MaxAnswerBytes is
// answered as a spent budget is, a 422 naming the limit, never a 5xx.
func TestAnswerLimitIs422(t *testing.T) {
	err := fmt.Errorf("resolve: %w", &symbolication.LimitError{Limit: symbolication.AnswerBytes, Max: symbolication.MaxAnswerBytes})
	status, body := errorResponse(err)
	want := map[string]any{"detail": validationError{{Type: valueErr, Loc: []any{"body", "stacktraces"},
		Msg: fmt.Sprintf("The answer would be larger than %d bytes", symbolication.MaxAnswerBytes)}}}
	if status != http.StatusUnprocessableEntity {
		t.Errorf("status %d, want 422", status)
	}
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}
