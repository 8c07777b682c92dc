/*
 * glusterfs2 fuzz harnesses: shared helpers.
 *
 * FUZZ_CHECK fails loudly (message, then abort): libFuzzer reports the
 * abort as a crash and keeps the input that caused it.
 */

#ifndef GF2_FUZZ_H
#define GF2_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: invariant failed: %s\n", \
			__FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

/* Reads the input from the front, returning zeros once it is used up. */
struct fuzz_in {
	const uint8_t *p;
	size_t left;
};

static inline uint8_t fuzz_u8(struct fuzz_in *in)
{
	uint8_t v = 0;

	if (in->left > 0) {
		v = *in->p++;
		in->left--;
	}
	return v;
}

static inline uint16_t fuzz_u16(struct fuzz_in *in)
{
	uint16_t v = fuzz_u8(in);

	return (uint16_t)(v | ((uint16_t)fuzz_u8(in) << 8));
}

static inline uint32_t fuzz_u32(struct fuzz_in *in)
{
	uint32_t v = fuzz_u16(in);

	return v | ((uint32_t)fuzz_u16(in) << 16);
}

static inline uint64_t fuzz_u64(struct fuzz_in *in)
{
	uint64_t v = fuzz_u32(in);

	return v | ((uint64_t)fuzz_u32(in) << 32);
}

#endif /* GF2_FUZZ_H */
