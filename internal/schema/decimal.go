package schema

import (
	"encoding/json"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// Numbers are compared as the decimal texts they are, never as float64:
// 10.000000000000000001 is above a maximum of 10 even though both parse to
// the same float64. jsonschema/v6 compares with math/big.Rat; a decimal
// compares the same way without allocating, and declines the texts whose
// exponents are too large to be worth deciding here (the reference decides
// those).

// decimal is a JSON number text split for exact comparison. Its value is
// 0.d₁d₂…dₙ × 10^point, where the significant digits d are the n digits of
// intPart+fracPart starting at lead.
type decimal struct {
	neg           bool
	intPart, frac string
	lead, n       int
	point         int64
}

// maxDecimalExponent bounds the exponents parseDecimal takes. math/big.Rat,
// and with it jsonschema/v6, refuses exponents above a million; no tool
// argument needs more than a few hundred.
const maxDecimalExponent = 10000

// parseDecimal parses s, which must be a number as JSON writes it (no
// leading "+", no leading zeros, digits on both sides of a point). It
// reports false for anything else, and for exponents or digit runs beyond
// maxDecimalExponent.
func parseDecimal(s string) (decimal, bool) {
	var d decimal
	if len(s) > maxDecimalExponent {
		return d, false
	}
	i := 0
	if i < len(s) && s[i] == '-' {
		d.neg = true
		i++
	}
	start := i
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return d, false
	}
	d.intPart = s[start:i]
	if i < len(s) && s[i] == '.' {
		i++
		start = i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return d, false
		}
		d.frac = s[start:i]
	}
	var exp int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		negExp := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			negExp = s[i] == '-'
			i++
		}
		start = i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if exp = exp*10 + int64(s[i]-'0'); exp > maxDecimalExponent {
				return d, false
			}
			i++
		}
		if i == start {
			return d, false
		}
		if negExp {
			exp = -exp
		}
	}
	if i != len(s) {
		return d, false
	}
	total := len(d.intPart) + len(d.frac)
	first, last := -1, -1
	for j := range total {
		if d.at(j) != '0' {
			if first < 0 {
				first = j
			}
			last = j
		}
	}
	if first < 0 {
		return decimal{}, true // zero, whatever its sign
	}
	d.lead, d.n = first, last-first+1
	d.point = int64(len(d.intPart)-first) + exp
	return d, true
}

// at returns the j-th digit of intPart+frac.
func (d *decimal) at(j int) byte {
	if j < len(d.intPart) {
		return d.intPart[j]
	}
	return d.frac[j-len(d.intPart)]
}

func (d *decimal) sign() int {
	switch {
	case d.n == 0:
		return 0
	case d.neg:
		return -1
	}
	return 1
}

// cmp compares d and e as numbers: -1 if d < e, 0 if equal, +1 if d > e.
func (d *decimal) cmp(e *decimal) int {
	ds, es := d.sign(), e.sign()
	if ds != es {
		if ds < es {
			return -1
		}
		return 1
	}
	if ds == 0 {
		return 0
	}
	return ds * d.cmpAbs(e)
}

func (d *decimal) cmpAbs(e *decimal) int {
	if d.point != e.point {
		if d.point < e.point {
			return -1
		}
		return 1
	}
	for i := 0; i < d.n && i < e.n; i++ {
		a, b := d.at(d.lead+i), e.at(e.lead+i)
		if a != b {
			if a < b {
				return -1
			}
			return 1
		}
	}
	switch {
	case d.n < e.n:
		return -1
	case d.n > e.n:
		return 1
	}
	return 0
}

// numberText renders a number for a message as a model would write it:
// "10.5", never "21/2"; "1e+400" for a number too long to write out.
// Every JSON number is a terminating decimal; a fraction that is not
// (which no JSON text yields) is rounded to 12 places.
func numberText(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	// Scale by 10^k, k the larger count of 2s and 5s in the denominator,
	// so the value is a whole number of 10^-k units.
	den := new(big.Int).Set(r.Denom())
	twos := den.TrailingZeroBits()
	den.Rsh(den, twos)
	fives := uint(0)
	one, five, q, rem := big.NewInt(1), big.NewInt(5), new(big.Int), new(big.Int)
	for den.Cmp(one) != 0 {
		q.QuoRem(den, five, rem)
		if rem.Sign() != 0 {
			s := strings.TrimRight(strings.TrimRight(r.FloatString(12), "0"), ".")
			if s == "-0" {
				s = "0"
			}
			return s
		}
		den.Set(q)
		fives++
	}
	k := int(max(twos, fives))
	scaled := new(big.Int).Mul(r.Num(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil))
	scaled.Quo(scaled, r.Denom())
	neg := scaled.Sign() < 0
	digits := scaled.Abs(scaled).String()
	// value = digits × 10^-k; drop trailing zeros into the exponent.
	exp := -k
	for len(digits) > 1 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp++
	}
	var s string
	switch {
	case digits == "0":
		return "0"
	case exp >= 0 && len(digits)+exp <= 21:
		s = digits + strings.Repeat("0", exp)
	case exp < 0 && -exp < len(digits):
		s = digits[:len(digits)+exp] + "." + digits[len(digits)+exp:]
	case exp < 0 && -exp-len(digits) < 6:
		s = "0." + strings.Repeat("0", -exp-len(digits)) + digits
	default:
		// d.ddd × 10^(exp + len-1)
		e := exp + len(digits) - 1
		s = digits[:1]
		if len(digits) > 1 {
			s += "." + digits[1:]
		}
		s += "e"
		if e >= 0 {
			s += "+"
		}
		s += strconv.Itoa(e)
	}
	if neg {
		s = "-" + s
	}
	return s
}

// ratOK reports whether math/big.Rat, and so jsonschema/v6, can read the
// JSON number text n.
func ratOK(n json.Number) bool {
	_, ok := new(big.Rat).SetString(string(n))
	return ok
}

// unreadableNumber finds, depth first, a number in v that math/big.Rat
// cannot read (an exponent beyond a million), with its location.
func unreadableNumber(v any, loc []string) ([]string, json.Number, bool) {
	switch x := v.(type) {
	case json.Number:
		if (len(x) > maxDecimalExponent || strings.ContainsAny(string(x), "eE")) && !ratOK(x) {
			return loc, x, true
		}
	case []any:
		for i, e := range x {
			if l, n, ok := unreadableNumber(e, append(loc, strconv.Itoa(i))); ok {
				return l, n, true
			}
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if l, n, ok := unreadableNumber(x[k], append(loc, k)); ok {
				return l, n, true
			}
		}
	}
	return nil, "", false
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
