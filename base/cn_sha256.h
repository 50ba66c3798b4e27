/* sha256: SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), for the proofs the ranks of an NCCL job
 * on several nodes give each other at their cut (preload/agent/span.c): a secret that only they
 * know, never sent. */
#ifndef CN_SHA256_H
#define CN_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define CN_SHA256_LEN 32

struct cn_sha256 {
	uint32_t h[8];
	uint64_t bytes; /* hashed so far */
	uint8_t block[64];
	size_t used; /* bytes of block filled */
};

void cn_sha256_init(struct cn_sha256 *s);
void cn_sha256_add(struct cn_sha256 *s, const void *data, size_t len);
void cn_sha256_end(struct cn_sha256 *s, uint8_t out[CN_SHA256_LEN]);
/* The digest of data in one call. */
void cn_sha256(const void *data, size_t len, uint8_t out[CN_SHA256_LEN]);
/* HMAC-SHA-256 of msg under key (any length). */
void cn_sha256_hmac(const void *key, size_t klen, const void *msg, size_t mlen,
		    uint8_t out[CN_SHA256_LEN]);

#endif
