/* spanwire: what the ranks of an NCCL job on several nodes say at their cut over TCP: the ports
 * they look for its leader on, the proofs that each side is a rank of the job, the lines in order
 * (docs/FILES.md). */
#ifndef CN_SPANWIRE_H
#define CN_SPANWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cn_sha256.h"

#define CN_SPANWIRE_VERSION   1
#define CN_SPANWIRE_PORTS     64 /* [nccl] cut_port and the 63 after it */
#define CN_SPANWIRE_TRIES     8	 /* of those, the ports a job's leader may take, in order */
#define CN_SPANWIRE_PROOF_HEX 32 /* a proof: 16 bytes of HMAC-SHA-256, in hex */
#define CN_SPANWIRE_NONCE_HEX 32
#define CN_SPANWIRE_LINE      8192 /* the longest line either side reads */

/* What a connection has brought and no line took yet. */
struct cn_spanwire_in {
	char buf[2 * CN_SPANWIRE_LINE];
	size_t used;
};

/* All of text written to the socket fd (no SIGPIPE): 0 or -errno. */
int cn_spanwire_send(int fd, const char *text);
/* What the socket fd has now, added to in without blocking: the bytes read, 0 at its end, or
 * -errno (-EAGAIN: nothing yet). */
long cn_spanwire_fill(int fd, struct cn_spanwire_in *in);
/* The next whole line in in, into line without its newline: true when there was one. A line
 * longer than the buffer is dropped. */
bool cn_spanwire_take(struct cn_spanwire_in *in, char *line, size_t len);

/* A communicator's secret, from its unique id. */
void cn_spanwire_secret(const void *id, size_t len, uint8_t out[CN_SHA256_LEN]);
/* A communicator's secret from its parent's: how it was made (split, shrink, grow) and with
 * what (the split's colour, the ranks left out). */
void cn_spanwire_derive(const uint8_t parent[CN_SHA256_LEN], const char *how, const void *arg,
			size_t len, uint8_t out[CN_SHA256_LEN]);
/* The proof of role ("rank" or "hub") for this meeting: job, both nonces, and the rank's node and
 * pid, under secret; NUL-terminated hex into out. */
void cn_spanwire_proof(const uint8_t secret[CN_SHA256_LEN], const char *role, const char *job,
		       const char *hub_nonce, const char *rank_nonce, const char *node, int pid,
		       char out[CN_SPANWIRE_PROOF_HEX + 1]);
/* Two proofs are the same, compared in constant time. */
bool cn_spanwire_same(const char *a, const char *b);
/* A fresh nonce (getrandom), NUL-terminated hex into out; 0 or -errno. */
int cn_spanwire_nonce(char out[CN_SPANWIRE_NONCE_HEX + 1]);
/* The ith port (0 <= i < CN_SPANWIRE_TRIES) where the leader of job's cut may listen: from base
 * and the job's name, so that every rank of it tries the same ones in the same order and two jobs
 * mostly start apart. */
unsigned cn_spanwire_port(unsigned base, const char *job, int i);

#endif
