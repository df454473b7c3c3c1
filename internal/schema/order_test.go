package schema

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMessageOrder: the problems of several bad properties come in the
// order of their locations, whatever order jsonschema/v6 found them in
// (it gathers them from a map), so the same arguments always get the same
// message.
func TestMessageOrder(t *testing.T) {
	t.Parallel()
	type in struct {
		Alpha string `json:"alpha" minLength:"3"`
		Bravo int    `json:"bravo" minimum:"10"`
		Delta string `json:"delta" enum:"x|y"`
		Echo  int    `json:"echo" maximum:"1"`
	}
	s := inferSchema("order", "In", reflect.TypeFor[in]())
	v, err := decodeArguments([]byte(`{"alpha":"a","bravo":1,"delta":"z","echo":5}`))
	require.NoError(t, err)
	const want = `/alpha: 1 character is shorter than the minimum 3. Send a string of at least 3 characters. ` +
		`/bravo: 1 is below the minimum 10. Send an integer of at least 10. ` +
		`/delta: "z" is not an allowed value. Send one of "x", "y". (1 more problems not shown.)`
	for range 40 {
		err := s.ValidateReference(v)
		require.Error(t, err)
		require.Equal(t, want, s.ValidationError(err).Message)
	}
}
