package checker

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Redis Cluster's hash slots: a fault that touches some of a cluster's slots (a shard's primary killed,
// a slot moved) acts on the keys that live there and on no others.

// ShardSlotsParam is the fault parameter that scopes a fault to some of a Redis Cluster's hash slots:
// comma-separated ranges ("0-5460,10923-16383"; a single slot is "15222"). A fault that kills a shard's
// primary records every slot that primary served; a slot migration records the moved slot.
const ShardSlotsParam = "slots"

// slotRange is an inclusive range of hash slots.
type slotRange struct{ lo, hi int }

// parseSlots reads ShardSlotsParam; an empty parameter is no scope (nil).
func parseSlots(s string) ([]slotRange, error) {
	var out []slotRange
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		a, b, ok := strings.Cut(part, "-")
		lo, err := strconv.Atoi(a)
		if err != nil {
			return nil, fmt.Errorf("slot range %q: %w", part, err)
		}
		hi := lo
		if ok {
			if hi, err = strconv.Atoi(b); err != nil {
				return nil, fmt.Errorf("slot range %q: %w", part, err)
			}
		}
		if lo < 0 || hi < lo || hi >= 16384 {
			return nil, fmt.Errorf("slot range %q: want 0 <= lo <= hi < 16384", part)
		}
		out = append(out, slotRange{lo, hi})
	}
	return out, nil
}

func inSlots(rs []slotRange, slot int) bool {
	for _, r := range rs {
		if slot >= r.lo && slot <= r.hi {
			return true
		}
	}
	return false
}

// touches reports whether a fault scoped to rs (nil: the whole backend) acts on key.
func touches(rs []slotRange, key string) bool {
	return rs == nil || inSlots(rs, HashSlot(key))
}

// HashSlot is Redis Cluster's hash slot of key: CRC16 (XMODEM) of the key, or of its hash tag (the
// text between the first '{' and the next '}', when not empty), modulo 16384.
func HashSlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}

var _ = slices.Contains[[]int]
