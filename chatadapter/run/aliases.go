package run

import (
	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
)

// Run's JSON values keep the order of object members (package ordered).
type (
	object = ordered.Object
	member = ordered.Member
)
