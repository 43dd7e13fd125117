/* Names to upstream addresses for the proxy (netns-internal.h): pins from the policy, and the
 * host's resolver in one worker thread. */

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/fd-util.h"
#include "netns/netns-internal.h"
#include "policy/policy.h"

#define QUEUE_MAX 256 /* questions waiting for the worker */

struct question {
	struct question *next;
	void *cookie;
	char name[NETNS_DNS_NAME_MAX + 1];
};

struct answer {
	struct answer *next;
	struct netns_lookup_answer a;
};

struct netns_lookup {
	const struct policy *policy;
	int event_fd;
	pthread_t worker;
	bool started, stopping;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct question *q_head, **q_tail; /* for the worker, FIFO */
	size_t n_questions;
	struct answer *a_head, **a_tail; /* for the proxy, FIFO */
};

static int to_addr(const char *literal, struct netns_addr *ret)
{
	struct netns_addr a = {.family = AF_INET};

	if (inet_pton(AF_INET, literal, a.addr) != 1) {
		a.family = AF_INET6;
		if (inet_pton(AF_INET6, literal, a.addr) != 1)
			return -EINVAL;
	}
	*ret = a;
	return 0;
}

const char *netns_pinned_bound_name(const struct policy *p, const struct netns_addr *a)
{
	struct netns_addr pin;

	for (size_t i = 0; i < p->network.n_resolve; i++)
		if (to_addr(p->network.resolve[i].address, &pin) >= 0 &&
		    netns_addr_equal(&pin, a) && netns_name_is_bound(p, p->network.resolve[i].name))
			return p->network.resolve[i].name;
	return NULL;
}

int netns_lookup_pinned(const struct netns_lookup *l, const char *name, struct netns_addr *ret)
{
	const struct policy *p = l->policy;

	for (size_t i = 0; i < p->network.n_resolve; i++)
		if (streq(p->network.resolve[i].name, name))
			return to_addr(p->network.resolve[i].address, ret);
	return -ENOENT;
}

bool netns_addr_from_sockaddr(const struct sockaddr *sa, struct netns_addr *ret)
{
	if (sa->sa_family == AF_INET) {
		ret->family = AF_INET;
		memcpy(ret->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		ret->family = AF_INET6;
		memcpy(ret->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return true;
	}
	return false;
}

static void resolve(struct netns_lookup_answer *a, const char *name)
{
	const struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	int r;

	r = getaddrinfo(name, NULL, &hints, &res);
	if (r != 0) {
		a->error = r == EAI_NONAME || r == EAI_NODATA ? -ENOENT
			   : r == EAI_AGAIN		      ? -EAGAIN
			   : r == EAI_MEMORY		      ? -ENOMEM
							      : -EIO;
		return;
	}
	for (const struct addrinfo *ai = res; ai && a->n < NETNS_LOOKUP_ADDRS_MAX;
	     ai = ai->ai_next) {
		if (netns_addr_from_sockaddr(ai->ai_addr, &a->addrs[a->n]))
			a->n++;
	}
	freeaddrinfo(res);
	if (a->n == 0)
		a->error = -ENOENT;
}

static void *worker_main(void *userdata)
{
	struct netns_lookup *l = userdata;
	const uint64_t one = 1;

	pthread_mutex_lock(&l->lock);
	for (;;) {
		struct question *q;
		struct answer *a;

		while (!l->q_head && !l->stopping)
			pthread_cond_wait(&l->wake, &l->lock);
		if (l->stopping)
			break;
		q = l->q_head;
		l->q_head = q->next;
		if (!l->q_head)
			l->q_tail = &l->q_head;
		l->n_questions--;
		pthread_mutex_unlock(&l->lock);

		a = calloc(1, sizeof(*a));
		if (a) {
			a->a.cookie = q->cookie;
			resolve(&a->a, q->name);
		}
		free(q);

		pthread_mutex_lock(&l->lock);
		if (a) {
			*l->a_tail = a;
			l->a_tail = &a->next;
		}
		/* Without memory the answer is lost: the connection waits until it is closed. */
		(void)!write(l->event_fd, &one, sizeof(one));
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

int netns_lookup_new(const struct policy *p, struct netns_lookup **ret)
{
	_cleanup_(netns_lookup_freep) struct netns_lookup *l = NULL;
	int r;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->policy = p;
	l->q_tail = &l->q_head;
	l->a_tail = &l->a_head;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->wake, NULL);
	l->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (l->event_fd < 0)
		return -errno;
	r = -pthread_create(&l->worker, NULL, worker_main, l);
	if (r < 0)
		return r;
	l->started = true;
	*ret = TAKE_PTR(l);
	return 0;
}

struct netns_lookup *netns_lookup_free(struct netns_lookup *l)
{
	if (!l)
		return NULL;
	if (l->started) {
		pthread_mutex_lock(&l->lock);
		l->stopping = true;
		pthread_cond_signal(&l->wake);
		pthread_mutex_unlock(&l->lock);
		/* A getaddrinfo() under way is waited for: it ends within the resolver's own
		 * timeout. */
		pthread_join(l->worker, NULL);
	}
	while (l->q_head) {
		struct question *q = l->q_head;

		l->q_head = q->next;
		free(q);
	}
	while (l->a_head) {
		struct answer *a = l->a_head;

		l->a_head = a->next;
		free(a);
	}
	(void)al_close(l->event_fd);
	pthread_cond_destroy(&l->wake);
	pthread_mutex_destroy(&l->lock);
	free(l);
	return NULL;
}

int netns_lookup_fd(const struct netns_lookup *l)
{
	return l->event_fd;
}

int netns_lookup_start(struct netns_lookup *l, const char *name, void *cookie)
{
	struct question *q;

	if (strlen(name) > NETNS_DNS_NAME_MAX)
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->cookie = cookie;
	strcpy(q->name, name);
	pthread_mutex_lock(&l->lock);
	if (l->n_questions >= QUEUE_MAX) {
		pthread_mutex_unlock(&l->lock);
		free(q);
		return -EBUSY;
	}
	*l->q_tail = q;
	l->q_tail = &q->next;
	l->n_questions++;
	pthread_cond_signal(&l->wake);
	pthread_mutex_unlock(&l->lock);
	return 0;
}

int netns_lookup_take(struct netns_lookup *l, struct netns_lookup_answer *ret)
{
	struct answer *a;
	uint64_t n;

	pthread_mutex_lock(&l->lock);
	a = l->a_head;
	if (a) {
		l->a_head = a->next;
		if (!l->a_head)
			l->a_tail = &l->a_head;
	} else {
		/* Empty: reset the eventfd, under the lock so that no answer's wakeup is lost. */
		(void)!read(l->event_fd, &n, sizeof(n));
	}
	pthread_mutex_unlock(&l->lock);
	if (!a)
		return -EAGAIN;
	*ret = a->a;
	free(a);
	return 0;
}
