package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
)

// The fixtures of the suite's input-required-result-* scenarios (protocol
// revision 2026-07-28, SEP-2322): tools that ask with ask.Elicit,
// ask.Sample and ask.Roots under the keys the scenarios expect. The first
// run of each gets ask.ErrInputRequired and the call ends with an
// input-required result; the client's retry runs the handler again, which
// then gets the answers. Clients of older revisions get the same questions
// as elicitation/create, sampling/createMessage and roots/list requests.

const (
	nameSchema    = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`
	confirmSchema = `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`
	colorSchema   = `{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}`
)

// firstErr returns the first error that is not ask.ErrInputRequired, or
// else the first that is: a handler that asks several things in one round
// carries on past each ErrInputRequired and returns it at the end.
func firstErr(errs ...error) error {
	var asked error
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, ask.ErrInputRequired):
			if asked == nil {
				asked = err
			}
		default:
			return err
		}
	}
	return asked
}

// answer renders an elicitation's result as "action=…, content=…".
func answer(res ask.ElicitResult) string {
	content := "{}"
	if res.Content != nil {
		content = string(res.Content)
	}
	return fmt.Sprintf("action=%s, content=%s", res.Action, content)
}

func elicitKey(c *llmtool.ReadCtx, key, message, schema string) (ask.ElicitResult, error) {
	return ask.Elicit(c, ask.ElicitRequest{Key: key, Message: message, Schema: json.RawMessage(schema)})
}

func sampleKey(c *llmtool.ReadCtx, key, prompt string) (ask.SampleResult, error) {
	return ask.Sample(c, ask.SampleRequest{Key: key, MaxTokens: 50,
		Messages: []ask.SampleMessage{{Role: "user", Content: llmtool.TextContent(prompt)}}})
}

func rootList(roots []ask.Root) string {
	uris := make([]string, len(roots))
	for i, r := range roots {
		uris[i] = r.URI
	}
	return strings.Join(uris, ", ")
}

var irElicitation = llmtool.Read("test_input_required_result_elicitation", "Asks the user's name through an input-required result.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		res, err := elicitKey(c, "user_name", "What is your name?", nameSchema)
		if err != nil {
			return llmtool.Rich{}, err
		}
		return text("Hello: " + answer(res)), nil
	}, llmtool.FriendlyName("Ask name"))

var irSampling = llmtool.Read("test_input_required_result_sampling", "Asks the client's model through an input-required result.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		res, err := sampleKey(c, "capital_question", "What is the capital of France?")
		if err != nil {
			return llmtool.Rich{}, err
		}
		return text("LLM response: " + res.Content.Text), nil
	}, llmtool.FriendlyName("Ask model"))

var irListRoots = llmtool.Read("test_input_required_result_list_roots", "Asks the client's roots through an input-required result.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		roots, err := ask.Roots(c, ask.RootsRequest{Key: "client_roots"})
		if err != nil {
			return llmtool.Rich{}, err
		}
		return text("Roots: " + rootList(roots)), nil
	}, llmtool.FriendlyName("Ask roots"))

var irRequestState = llmtool.Read("test_input_required_result_request_state", "Asks for a confirmation; the retry's requestState is verified.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		res, err := elicitKey(c, "confirm", "Please confirm", confirmSchema)
		if err != nil {
			return llmtool.Rich{}, err
		}
		// The handler runs with the answer only after the adapter verified
		// the requestState (signature, tool, arguments, principal, expiry).
		return text("state-ok: " + answer(res)), nil
	}, llmtool.FriendlyName("Confirm"))

var irMultipleInputs = llmtool.Read("test_input_required_result_multiple_inputs", "Asks the user, the model and the roots in one round.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		name, nerr := elicitKey(c, "user_name", "What is your name?", nameSchema)
		greeting, gerr := sampleKey(c, "greeting", "Generate a greeting")
		roots, rerr := ask.Roots(c, ask.RootsRequest{Key: "client_roots"})
		if err := firstErr(nerr, gerr, rerr); err != nil {
			return llmtool.Rich{}, err
		}
		return text(fmt.Sprintf("Name: %s; greeting: %s; roots: %s", answer(name), greeting.Content.Text, rootList(roots))), nil
	}, llmtool.FriendlyName("Ask three things"))

var irMultiRound = llmtool.Read("test_input_required_result_multi_round", "Asks a name, then a colour: two rounds.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		name, err := elicitKey(c, "step1", "Step 1: What is your name?", nameSchema)
		if err != nil {
			return llmtool.Rich{}, err
		}
		color, err := elicitKey(c, "step2", "Step 2: What is your favorite color?", colorSchema)
		if err != nil {
			return llmtool.Rich{}, err
		}
		return text(fmt.Sprintf("Step 1: %s; step 2: %s", answer(name), answer(color))), nil
	}, llmtool.FriendlyName("Ask twice"))

var irTamperedState = llmtool.Read("test_input_required_result_tampered_state", "Asks for a confirmation; a changed requestState is refused.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		res, err := elicitKey(c, "confirm", "Please confirm", confirmSchema)
		if err != nil {
			return llmtool.Rich{}, err
		}
		return text("Confirmed: " + answer(res)), nil
	}, llmtool.FriendlyName("Confirm once"))

var irCapabilities = llmtool.Read("test_input_required_result_capabilities", "Asks only what the client declared it can answer.",
	func(c *llmtool.ReadCtx, _ none) (llmtool.Rich, error) {
		var parts []string
		name, nerr := elicitKey(c, "user_name", "What is your name?", nameSchema)
		if nerr == nil {
			parts = append(parts, "name: "+answer(name))
		}
		reply, serr := sampleKey(c, "greeting", "Generate a greeting")
		if serr == nil {
			parts = append(parts, "greeting: "+reply.Content.Text)
		}
		// ask answers ErrUnsupported for what the request's
		// clientCapabilities leave out; skip that, ask the rest.
		if errors.Is(nerr, ask.ErrUnsupported) {
			nerr = nil
		}
		if errors.Is(serr, ask.ErrUnsupported) {
			serr = nil
		}
		if err := firstErr(nerr, serr); err != nil {
			return llmtool.Rich{}, err
		}
		if len(parts) == 0 {
			return text("The client declared neither elicitation nor sampling."), nil
		}
		return text(strings.Join(parts, "; ")), nil
	}, llmtool.FriendlyName("Ask what the client can answer"))

// inputRequired is the module of the input-required fixtures.
var inputRequired = llmtool.DefineTools("inputrequired",
	irElicitation, irSampling, irListRoots, irRequestState, irMultipleInputs, irMultiRound, irTamperedState, irCapabilities)
