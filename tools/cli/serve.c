/* serve: cudanap metrics --listen, the metrics over HTTP: GET /metrics answered with the text
 * made anew, one request at a time, each bounded in size and time (docs/FILES.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* A request's head may be this long, and a request this slow from accept to the last byte of the
 * answer: a client that sends too much, or nothing, holds the next one up this long at most. */
#define HEAD_MAX   8192
#define REQUEST_MS 5000

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000 + (double)ts.tv_nsec / 1e6;
}

/* Until fd is ready for events, or the deadline: 1 ready, 0 not in time. */
static int wait_for(int fd, short events, double deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		double left = deadline - now_ms();
		int r;

		if (left <= 0)
			return 0;
		r = poll(&p, 1, (int)left + 1);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return 0;
	}
}

/* ADDR:PORT, [ADDR]:PORT or :PORT (every address) split; -1 when it is none of them. */
static int split_addr(const char *addr, char *host, size_t hlen, const char **port)
{
	const char *colon = strrchr(addr, ':');
	size_t n;

	if (!colon || !colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return -1;
	*port = colon + 1;
	n = (size_t)(colon - addr);
	if (n >= 2 && addr[0] == '[' && addr[n - 1] == ']') {
		addr++;
		n -= 2;
	}
	if (n >= hlen || memchr(addr, '[', n) || memchr(addr, ']', n))
		return -1;
	snprintf(host, hlen, "%.*s", (int)n, addr);
	return 0;
}

/* A socket listening at addr, close-on-exec; -1 said in one line. */
static int listen_at(const char *addr)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICSERV,
				  .ai_socktype = SOCK_STREAM },
			*res, *ai;
	char host[256];
	const char *port;
	int fd = -1, r, err = 0, one = 1, zero = 0;

	if (split_addr(addr, host, sizeof(host), &port) < 0) {
		fprintf(stderr,
			"%s: --listen %s: not ADDR:PORT (127.0.0.1:9877, [::1]:9877, :9877)\n",
			cli_prog, addr);
		return -1;
	}
	r = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (r != 0) {
		fprintf(stderr, "%s: --listen %s: %s\n", cli_prog, addr, gai_strerror(r));
		return -1;
	}
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		/* every address: IPv4's too on an IPv6 socket */
		if (!host[0] && ai->ai_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 16) < 0) {
			err = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	if (fd < 0)
		fprintf(stderr, "%s: --listen %s: cannot listen: %s\n", cli_prog, addr,
			strerror(err));
	return fd;
}

/* The request's head read, until its blank line: its length, 0 when the client closed or was
 * too slow, -1 when it sent more than HEAD_MAX. */
static int read_head(int c, char *buf, double deadline)
{
	size_t n = 0;

	while (n < HEAD_MAX && wait_for(c, POLLIN, deadline)) {
		ssize_t r = recv(c, buf + n, HEAD_MAX - n, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return 0;
		n += (size_t)r;
		buf[n] = '\0';
		if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
			return (int)n;
	}
	return n >= HEAD_MAX ? -1 : 0;
}

static void send_all(int c, const char *p, size_t len, double deadline)
{
	while (len && wait_for(c, POLLOUT, deadline)) {
		ssize_t r = send(c, p, len, MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;
		p += r;
		len -= (size_t)r;
	}
}

/* An answer: its status line, its type and length, and the body unless the request was HEAD. */
static void answer(int c, const char *status, const char *type, const char *body, size_t len,
		   bool head, double deadline)
{
	char h[300];
	int n = snprintf(h, sizeof(h),
			 "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
			 "Connection: close\r\n\r\n",
			 status, type, len,
			 strncmp(status, "405", 3) == 0 ? "Allow: GET, HEAD\r\n" : "");

	send_all(c, h, (size_t)n, deadline);
	if (!head)
		send_all(c, body, len, deadline);
}

static void plain(int c, const char *status, const char *text, bool head, double deadline)
{
	answer(c, status, "text/plain; charset=utf-8", text, strlen(text), head, deadline);
}

/* The connection closed once the answer is out: what the client still sends (a head too long)
 * read and dropped first, for a second at most, lest the close reset the connection before the
 * client has read the answer. */
static void hang_up(int c, double deadline)
{
	double until = now_ms() + 1000 < deadline ? now_ms() + 1000 : deadline;
	char sink[4096];
	size_t n = 0;

	shutdown(c, SHUT_WR);
	while (n < (1u << 20) && wait_for(c, POLLIN, until)) {
		ssize_t r = recv(c, sink, sizeof(sink), 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(c);
}

/* A GET or HEAD of target answered: /metrics, / (where the metrics are), or not found. */
static void answer_get(int c, const char *target, bool head,
		       int (*render)(void *, char **, size_t *), void *arg, double deadline)
{
	static const char type[] = "text/plain; version=0.0.4; charset=utf-8";
	char *text = NULL;
	size_t len = 0;

	if (strcmp(target, "/") == 0)
		plain(c, "200 OK", "cudanap metrics: GET /metrics\n", head, deadline);
	else if (strcmp(target, "/metrics") != 0)
		plain(c, "404 Not Found", "not found: GET /metrics\n", head, deadline);
	else if (render(arg, &text, &len) < 0)
		plain(c, "500 Internal Server Error", "out of memory\n", head, deadline);
	else
		answer(c, "200 OK", type, text, len, head, deadline);
	free(text);
}

/* One connection: its request read and answered, then closed. */
static void serve_one(int c, int (*render)(void *, char **, size_t *), void *arg)
{
	double deadline = now_ms() + REQUEST_MS;
	char buf[HEAD_MAX + 1], method[16], target[1024], version[16];
	int n = read_head(c, buf, deadline);

	if (n < 0) {
		plain(c, "431 Request Header Fields Too Large", "request too large\n", false,
		      deadline);
	} else if (n == 0) {
		; /* closed, or too slow: nobody to answer */
	} else if (sscanf(buf, "%15s %1023s %15s", method, target, version) != 3 ||
		   strncmp(version, "HTTP/1.", 7) != 0 || target[0] != '/') {
		plain(c, "400 Bad Request", "bad request\n", false, deadline);
	} else if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		plain(c, "405 Method Not Allowed", "GET /metrics\n", false, deadline);
	} else {
		target[strcspn(target, "?")] = '\0';
		answer_get(c, target, strcmp(method, "HEAD") == 0, render, arg, deadline);
	}
	hang_up(c, deadline);
}

int serve_listen(const char *addr, int (*render)(void *, char **, size_t *), void *arg)
{
	struct sockaddr_storage sa;
	socklen_t sl = sizeof(sa);
	char host[256] = "", port[16] = "";
	int fd = listen_at(addr);

	if (fd < 0)
		return 1;
	if (getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
		getnameinfo((struct sockaddr *)&sa, sl, host, sizeof(host), port, sizeof(port),
			    NI_NUMERICHOST | NI_NUMERICSERV);
	fprintf(stderr, "%s: metrics at http://%s%s%s:%s/metrics\n", cli_prog,
		strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", port);
	for (;;) {
		int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

		if (c >= 0)
			serve_one(c, render, arg); /* which closes c */
		else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
			usleep(100 * 1000); /* out of descriptors or memory: a while, then again */
	}
}
