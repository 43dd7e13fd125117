#pragma once

/* The clear start of an SSH connection as the egress proxy watches it (ssh.c), for netns/ and
 * tests/ only. RFC 4253: each side sends an identification line ("SSH-2.0-..."; a server may
 * send other lines first), then binary packets, neither encrypted nor authenticated until that
 * side's NEWKEYS (message 21). Both directions are read as they pass, unchanged, to learn the
 * server's host key: the first string of the key exchange's reply, message 31 (33 for
 * diffie-hellman-group-exchange-*), under the key exchange the two KEXINITs (message 20) agree
 * on, the first of the client's that the server offers too. After its NEWKEYS a direction is no
 * longer read. The destination-bound SSH agent signs only for a host key seen so, on a
 * connection the proxy allowed to one of the key's destinations. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "netns/netns-internal.h"

#define NETNS_SSH_PACKET_MAX 35000 /* RFC 4253 6.1: what every side must take */
#define NETNS_SSH_LINES_MAX 64	   /* lines a server sends before its identification */
#define NETNS_SSH_LINE_MAX 255	   /* RFC 4253 4.2, CR LF included */
#define NETNS_SSH_NAMES_MAX 2048   /* a KEXINIT's kex_algorithms name-list kept */
#define NETNS_SSH_HOSTKEY_MAX 4096 /* a host key blob (an RSA key of 16,384 bits fits) */
#define NETNS_SSH_ALGORITHM_MAX 64

enum netns_ssh_state {
	NETNS_SSH_IDENT,  /* before the identification line */
	NETNS_SSH_PACKET, /* clear packets */
	NETNS_SSH_DONE,	  /* after NEWKEYS: encrypted, not read */
};

struct netns_ssh_side {
	enum netns_ssh_state state;
	struct netns_buf acc; /* a line or a packet under way */
	size_t lines;
	char kex_names[NETNS_SSH_NAMES_MAX]; /* its KEXINIT's kex_algorithms */
	bool kexinit;
};

struct netns_ssh_watch {
	struct netns_ssh_side client, server;
	char kex[NETNS_SSH_ALGORITHM_MAX]; /* agreed on once both KEXINITs came */
	uint8_t hostkey[NETNS_SSH_HOSTKEY_MAX];
	size_t hostkey_len; /* 0 until the reply came */
	int error;	    /* the first error, kept */
};

/* Reads n bytes that went from the client (the sandbox) or from the server. Returns 0, or
 * -EBADMSG (not SSH, a malformed or oversized line or packet, a reply before both KEXINITs, a
 * second host key), -EPROTONOSUPPORT (SSH 1, or a key exchange whose reply is not known, such as
 * GSS-API's), -ENOMEM; err says why. After an error the watch takes nothing more. */
int netns_ssh_feed(struct netns_ssh_watch *w, bool from_server, const uint8_t *p, size_t n,
		   struct al_error *err);
/* The host key blob, once seen (its length in *ret_len), else NULL. */
const uint8_t *netns_ssh_hostkey(const struct netns_ssh_watch *w, size_t *ret_len);
/* Frees what w holds (not w). */
void netns_ssh_watch_done(struct netns_ssh_watch *w);
