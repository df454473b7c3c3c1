package chatadapter

import "context"

type conversationKey struct{}

// WithConversation returns a context whose turns (Dispatch, Run
// and their resumptions) belong to the conversation id, such as the
// host's primary key for it: every call they make carries it
// (llmtool.Call.Conversation), so the changes the calls make are recorded
// with it (llmtool.Options.Changesets). The tools list_changes and
// undo_changes then work on this conversation's changes: undo_changes
// without an id undoes its last change. Give a resumed turn the same id.
func WithConversation(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, conversationKey{}, id)
}

// conversationOf returns the id set by WithConversation, or "".
func conversationOf(ctx context.Context) string {
	s, _ := ctx.Value(conversationKey{}).(string)
	return s
}
