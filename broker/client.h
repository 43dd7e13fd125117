#pragma once

/* How the rest of airlock asks the broker for credentials: the broker daemon's socket, or the same
 * code in-process (the embedded default). fusefs and netns use this header only. */

#include <stddef.h>

#include "common/error.h"
#include "common/macro.h"
#include "policy/policy.h"

struct broker_client;

/* A secret value: len bytes at data, in memory that is wiped when freed. */
struct broker_secret {
	size_t len;
	char data[];
};

/* The embedded broker for policy p (borrowed; it must outlive the client): credentials are read
 * from their sources in this process. Returns 0 or -ENOMEM. */
int broker_client_new_embedded(const struct policy *p, struct broker_client **ret);
struct broker_client *broker_client_free(struct broker_client *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct broker_client *, broker_client_free);

/* Checks up front that every credential with a file injection can be served: its source type is
 * one this broker reads. Errors name the credential and the source. */
int broker_client_check_files(struct broker_client *c, struct al_error *err);

/* The content of the credential file of credential name, read fresh from its source. At most
 * BROKER_SECRET_MAX bytes. Errors (-ENOENT no such credential, -EOPNOTSUPP source not served,
 * -EFBIG, or the source's -errno) name the credential and the source in err. */
#define BROKER_SECRET_MAX (64 * 1024)
int broker_client_read_file(struct broker_client *c, const char *name, struct broker_secret **ret,
			    struct al_error *err);
struct broker_secret *broker_secret_free(struct broker_secret *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct broker_secret *, broker_secret_free);
