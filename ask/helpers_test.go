package ask_test

import "os"

// exampleDir returns a fresh directory for an example's database.
func exampleDir() string {
	dir, err := os.MkdirTemp("", "llmtool-ask-example")
	if err != nil {
		panic(err)
	}
	return dir
}
