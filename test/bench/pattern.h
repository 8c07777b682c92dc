/*
 * The benchmark data pattern: every byte of a benchmark file is a pure
 * function of (seed, offset), so a reader can check what it reads without
 * a second copy of the data.  The 8-byte word at offset 8*w is
 * mix(seed, w), little endian.  Cheap enough (a multiply per word) that
 * checking costs a small fraction of a core at the speeds measured here.
 */
#ifndef GF2_BENCH_PATTERN_H
#define GF2_BENCH_PATTERN_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>

static inline uint64_t pat_word(uint64_t seed, uint64_t w)
{
	uint64_t x = (w + seed * 0x632BE59BD9B4E019ULL) * 0x9E3779B97F4A7C15ULL;
	return x ^ (x >> 31) ^ seed;
}

static inline uint8_t pat_byte(uint64_t seed, uint64_t off)
{
	uint64_t v = pat_word(seed, off >> 3);
	return (uint8_t)(v >> (8 * (off & 7)));
}

/* Fill buf with the pattern of [off, off+len). */
static inline void pat_fill(void *buf, uint64_t off, size_t len, uint64_t seed)
{
	uint8_t *p = buf;
	while (len > 0 && (off & 7) != 0) {
		*p++ = pat_byte(seed, off++);
		len--;
	}
	uint64_t w = off >> 3;
	while (len >= 8) {
		uint64_t v = pat_word(seed, w++);
		memcpy(p, &v, 8);
		p += 8;
		len -= 8;
	}
	off = w << 3;
	while (len > 0) {
		*p++ = pat_byte(seed, off++);
		len--;
	}
}

/*
 * Check buf against the pattern of [off, off+len).  Returns -1 if it
 * matches, else the file offset of the first wrong byte.
 */
static inline int64_t pat_check(const void *buf, uint64_t off, size_t len,
				uint64_t seed)
{
	const uint8_t *p = buf;
	while (len > 0 && (off & 7) != 0) {
		if (*p != pat_byte(seed, off))
			return (int64_t)off;
		p++;
		off++;
		len--;
	}
	uint64_t w = off >> 3;
	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		if (v != pat_word(seed, w)) {
			uint64_t o = w << 3;
			while (*p == pat_byte(seed, o)) {
				p++;
				o++;
			}
			return (int64_t)o;
		}
		w++;
		p += 8;
		len -= 8;
	}
	off = w << 3;
	while (len > 0) {
		if (*p != pat_byte(seed, off))
			return (int64_t)off;
		p++;
		off++;
		len--;
	}
	return -1;
}

#endif
