#pragma once

/* `airlock mcp`: a Model Context Protocol server on stdio (JSON-RPC 2.0, one message a line).
 * protocol.c is pure: it parses messages, answers initialize and tools/list, turns a tool call's
 * arguments into what runs it (an exec request, a session's file operation), and a child's
 * answer into the tool's result. server.c runs the calls, each in a child process. The client is
 * an untrusted agent: what it asks is checked against what the operator allows before anything
 * runs, and again by `airlock exec` itself. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "agent/agent.h"
#include "common/error.h"

struct json_object;

#define MCP_MESSAGE_MAX AGENT_REQUEST_MAX /* bytes of one message (a line) */
#define MCP_JSON_DEPTH 64
#define MCP_PROTOCOL_LATEST "2025-11-25"
#define MCP_DEFAULT_TIMEOUT "60s" /* of a call that gives none */

/* JSON-RPC 2.0's error codes. */
#define MCP_PARSE_ERROR (-32700)
#define MCP_INVALID_REQUEST (-32600)
#define MCP_METHOD_NOT_FOUND (-32601)
#define MCP_INVALID_PARAMS (-32602)
#define MCP_INTERNAL_ERROR (-32603)

enum mcp_message_kind {
	MCP_MESSAGE_REQUEST,
	MCP_MESSAGE_NOTIFICATION,
	MCP_MESSAGE_RESPONSE, /* to a request of ours: we send none, so it is ignored */
};

struct mcp_message {
	enum mcp_message_kind kind;
	struct json_object *root;   /* owned: the whole message */
	struct json_object *id;	    /* borrowed from root: an integer or a string; NULL: none */
	const char *method;	    /* borrowed from root */
	struct json_object *params; /* borrowed from root; NULL: none */
};

/* Parses one message (len bytes, no newline). On failure returns MCP_PARSE_ERROR (not JSON) or
 * MCP_INVALID_REQUEST (not a JSON-RPC 2.0 message; a batch), err saying why, and *ret_id the
 * message's id when it could be read (a new reference, or NULL). */
int mcp_message_parse(const char *buf, size_t len, struct mcp_message *ret,
		      struct json_object **ret_id, struct al_error *err);
void mcp_message_done(struct mcp_message *m);

/* One line (with its newline) answering id: a result (taken) or an error. */
int mcp_result_line(struct json_object *id, struct json_object *result, char **ret);
int mcp_error_line(struct json_object *id, int code, const char *message, char **ret);

/* The protocol revision answered to a client that asked for requested (NULL: none): the same
 * when it is one we speak, else the latest. */
const char *mcp_protocol_negotiate(const char *requested);
/* initialize's result for its params (NULL: none); -EINVAL with err when they are not valid. */
int mcp_initialize_result(struct json_object *params, struct json_object **ret,
			  struct al_error *err);

/* What the operator lets a client bring, as for `airlock exec`. A client never brings a policy
 * or a workspace unless policy_dir is set: without it, unlike exec's own requests, a client's are
 * not taken to be the operator's. */
struct mcp_limits {
	bool policy_path; /* the operator's -p: a client names neither policy nor workspace */
	bool policy_dir;  /* --policy-dir: a client may name a policy file of it */
	unsigned allow;	  /* enum agent_exec_allow */
};

enum mcp_tool {
	MCP_TOOL_RUN_CODE,
	MCP_TOOL_SESSION_START,
	MCP_TOOL_SESSION_EXEC,
	MCP_TOOL_SESSION_STOP,
	MCP_TOOL_READ_FILE,
	MCP_TOOL_WRITE_FILE,
	MCP_TOOL_LIST_FILES,
	MCP_TOOL_REMOVE_FILE,
	MCP_TOOL_MAX,
};

const char *mcp_tool_to_string(enum mcp_tool t);
/* tools/list's result: every tool with its inputSchema (a policy or a workspace among its
 * properties only where limits let a client bring them) and outputSchema. */
int mcp_tools_list(const struct mcp_limits *limits, struct json_object **ret);
int mcp_tool_from_string(const char *s, enum mcp_tool *ret);

/* A tool call, planned. */
struct mcp_call {
	enum mcp_tool tool;
	char session[64]; /* every tool but run_code and session_start */
	char *request;	  /* run_code, session_exec: the exec request (JSON) */
	/* session_start: what the client asked for (NULL: nothing), and the TTL (a duration) */
	char *policy_name, *policy_json, *workspace, *memory;
	char ttl[32];
	char *path; /* the file tools: relative to the workspace ("": itself) */
	char *data; /* write_file */
	size_t len;
	unsigned file_flags; /* write_file: AGENT_FILE_* */
};
void mcp_call_done(struct mcp_call *c);

/* Plans tools/call's params ({name, arguments}) under limits. An unknown tool is
 * MCP_INVALID_PARAMS (a protocol error); arguments that are not valid, or that ask for more
 * than the operator allows, are -EINVAL or -EPERM with err naming the argument (the tool's own
 * error, for the model to read). */
int mcp_call_plan(struct json_object *params, const struct mcp_limits *limits, struct mcp_call *ret,
		  struct al_error *err);

/* The tool's result (content, structuredContent, isError) from what its child printed (out,
 * len bytes: a JSON object) and, when that is not one, its stderr (err_text). */
int mcp_call_result(enum mcp_tool tool, const char *out, size_t len, const char *err_text,
		    struct json_object **ret);
/* A tool's own error: isError with message. */
int mcp_call_error(const char *message, struct json_object **ret);

/* ---- the server (server.c) ---- */

struct mcp_options {
	struct agent_exec_options exec; /* the operator's, handed to every child */
	char *const *broker_argv;	/* the broker options as given, for the children */
	unsigned max_calls;		/* running at once */
	unsigned max_sessions;
};

/* Serves stdin and stdout until stdin ends or SIGTERM, SIGINT or SIGHUP comes; then kills what
 * runs and stops the sessions it started. Returns 0, or -errno when it could not start. */
int mcp_server_run(const struct mcp_options *o);
