package chatadapter

import "github.com/llmtool/llmtool/chatadapter/internal/ordered"

// The package's JSON values keep the order of object members (package
// ordered).
type (
	object = ordered.Object
	member = ordered.Member
)
