package rewrite

import "strings"

// A KeyMemo remembers a key rule's verdicts on the JSON keys it has been
// asked about: a session's frames repeat a few dozen keys, and the rule
// tests each against a list of words. A key has two slots, by two hashes
// of its fingerprint: its length and its first and last eight bytes,
// which are the key itself up to 16 bytes (most keys). So a hit costs two
// loads and the comparison of three words, where a map would hash the
// whole key and compare it; a longer key is compared whole too. The scans
// of this package (AppendCompact, ValidKeys) read a key's fingerprint
// where it lies in the frame. A KeyMemo is not safe for concurrent use; a
// nil *KeyMemo tests no key.
type KeyMemo struct {
	rule  func(key string) bool
	slots [memoSlots]keyVerdict
	long  *[memoSlots]string // the keys longer than 16 bytes
	fn    func(key string) bool
}

// memoSlots is the size of a KeyMemo's table: 256, a slot per value of a
// hash's top byte.
const memoSlots = 256

type keyVerdict struct {
	head, tail uint64 // the fingerprint
	n          int32  // the key's length; 0 for an empty slot
	sensitive  bool
}

// NewKeyMemo returns a KeyMemo of rule.
func NewKeyMemo(rule func(key string) bool) *KeyMemo {
	m := &KeyMemo{rule: rule}
	m.fn = m.Sensitive // made once: a method value passed on allocates
	return m
}

// Func is m.Sensitive as a func, for Redact and the other scans that take
// a rule.
func (m *KeyMemo) Func() func(key string) bool { return m.fn }

// Sensitive is the rule's verdict on key, remembered.
func (m *KeyMemo) Sensitive(key string) bool {
	n := len(key)
	if n == 0 {
		return m.rule(key)
	}
	var head, tail uint64
	if n >= 8 {
		head, tail = load64(key, 0), load64(key, n-8)
	} else {
		for i := 0; i < n; i++ {
			head |= uint64(key[i]) << (8 * i)
		}
	}
	return m.verdict(key, head, tail, keyHash(head, tail, n))
}

// at is Sensitive(s[i+1:end-1]): the key of the string literal s[i:end],
// without an escape, its fingerprint read where it lies. A key of up to 16
// bytes found in its first slot costs no call.
func (m *KeyMemo) at(s string, i, end int) bool {
	n := end - i - 2
	if n <= 0 || i+9 > len(s) {
		return m.Sensitive(s[i+1 : end-1])
	}
	head := load64(s, i+1)
	var tail uint64
	if n < 8 {
		head &= 1<<(8*n) - 1
	} else {
		tail = load64(s, end-9)
	}
	h := keyHash(head, tail, n)
	if v := &m.slots[h>>56]; v.head == head && v.tail == tail && int(v.n) == n && n <= 16 {
		return v.sensitive
	}
	return m.verdict(s[i+1:end-1], head, tail, h)
}

func keyHash(head, tail uint64, n int) uint64 {
	return (head ^ tail*0x9e3779b97f4a7c15 ^ uint64(n)) * 0xff51afd7ed558ccd
}

// verdict looks key up in its two slots, by the top two bytes of its hash
// h, asking the rule on a miss.
func (m *KeyMemo) verdict(key string, head, tail, h uint64) bool {
	i, j := int(h>>56), int(h>>48&0xff)
	if m.holds(i, key, head, tail) {
		return m.slots[i].sensitive
	}
	if m.holds(j, key, head, tail) {
		return m.slots[j].sensitive
	}
	if m.slots[i].n != 0 && m.slots[j].n == 0 {
		i = j // the first is taken, the second free
	}
	n := len(key)
	v := keyVerdict{head: head, tail: tail, n: int32(n), sensitive: m.rule(key)}
	if n > 16 {
		if m.long == nil {
			m.long = new([memoSlots]string)
		}
		m.long[i] = strings.Clone(key) // key may point into a frame
	}
	m.slots[i] = v
	return v.sensitive
}

// holds reports whether slot i holds the verdict on key, of fingerprint
// head, tail.
func (m *KeyMemo) holds(i int, key string, head, tail uint64) bool {
	v := &m.slots[i]
	return v.head == head && v.tail == tail && int(v.n) == len(key) && (len(key) <= 16 || m.long[i] == key)
}
