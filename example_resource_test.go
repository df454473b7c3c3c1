package llmtool_test

import (
	"context"
	"fmt"
	"log"

	"github.com/llmtool/llmtool"
)

// BookRef names a book in a resource's URI or a prompt's arguments.
type BookRef struct {
	ID string `json:"id" desc:"ID of the book."`
}

// bookPage is a resource template: reading "book://1" runs the handler with
// in.ID "1", in a read snapshot, with the policy and the entity checks a
// read tool gets.
var bookPage = llmtool.Resource("book", "book://{id}", "A book's title, as text.",
	func(c *llmtool.ReadCtx, in BookRef) (llmtool.Rich, error) {
		var title string
		err := c.QueryRow(`SELECT title FROM books WHERE id = ?`, in.ID).Scan(&title)
		return llmtool.Rich{Content: []llmtool.Content{llmtool.TextContent(title)}}, err
	})

// BlurbIn is the input of the prompt write_blurb.
type BlurbIn struct {
	ID   string `json:"id" desc:"ID of the book."`
	Tone string `json:"tone,omitempty" enum:"warm|dry" default:"warm" desc:"The blurb's tone (default warm)."`
}

// blurb is a prompt: a message template a person picks, rendered from typed
// arguments.
var blurb = llmtool.Prompt("write_blurb", "Write a blurb for a book.",
	func(c *llmtool.ReadCtx, in BlurbIn) ([]llmtool.Message, error) {
		var title string
		if err := c.QueryRow(`SELECT title FROM books WHERE id = ?`, in.ID).Scan(&title); err != nil {
			return nil, err
		}
		text := fmt.Sprintf("Write a %s two-line blurb for the book %q.", in.Tone, title)
		return []llmtool.Message{{Role: "user", Content: llmtool.TextContent(text)}}, nil
	})

// Resources and prompts ship in a module beside tools and run through the
// same Invoke; Complete completes their arguments (an enum from its values).
func ExampleResource() {
	db, done := exampleDB()
	defer done()
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: quietLogger()},
		llmtool.DefineTools("book_pages", bookPage, blurb))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	ctx := context.Background()

	page := reg.Invoke(ctx, llmtool.Call{Resource: "book://1"})
	fmt.Println(page.Content[0].Text)
	msgs := reg.Invoke(ctx, llmtool.Call{Prompt: "write_blurb", Args: []byte(`{"id": "1", "tone": "dry"}`)})
	fmt.Println(msgs.Messages[0].Role+":", msgs.Messages[0].Content.Text)
	tones, err := reg.Complete(ctx, "write_blurb", "tone", "")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tones)
	prompts, err := reg.List(ctx, &llmtool.ListOptions{Prompts: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range prompts {
		fmt.Println("prompt:", p.Name)
	}
	// Output:
	// The Go Programming Language
	// user: Write a dry two-line blurb for the book "The Go Programming Language".
	// [warm dry]
	// prompt: write_blurb
}
