/*
 * gatekeeper_plugin.h — the C ABI of swift-gatekeeper's shared-object provider plugins.
 *
 * A plugin is a shared object that exports one function,
 *
 *     const struct gk_plugin *gatekeeper_plugin_entry(void);
 *
 * returning a table that lives as long as the process (plugins are never unloaded). Only C types cross
 * this boundary: Swift's ABI is not stable on Linux, and an image that carries its own copy of a Swift
 * module cannot share its types with the host. A plugin written in Swift builds this table with the
 * PluginExport module of swift-gatekeeper.
 *
 * Versioning: `abi_version` is GK_PLUGIN_ABI_VERSION of the header the plugin was built with; the host
 * refuses a table whose version it does not speak, before calling anything in it. Fields are only ever
 * added at the end of a struct, and `size` says how much of it the other side filled in.
 *
 * Threads: the host calls `authenticate` on a thread of its own (never one that may not block), and may
 * call `cancel` from another thread while `authenticate` runs. Every other function may be called from
 * any thread, never at the same time for one instance except `authenticate`, which may run for several
 * logins at once.
 *
 * Secrets: an answer to a hidden question is handed to the plugin in memory the host wipes when
 * `authenticate` returns; a plugin must not keep it, and must wipe any copy it makes.
 */
#ifndef GATEKEEPER_PLUGIN_H
#define GATEKEEPER_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GK_PLUGIN_ABI_VERSION 1
#define GK_PLUGIN_ENTRY "gatekeeper_plugin_entry"

/* What a question or message is. */
enum gk_style {
    GK_ASK_HIDDEN = 1,   /* a secret: a password, a PIN; not echoed */
    GK_ASK_VISIBLE = 2,  /* a visible answer: a one-time code, a choice */
    GK_SHOW_INFO = 3,    /* a message, no answer */
    GK_SHOW_ERROR = 4,   /* an error message, no answer */
};

/* What the host's conversation answered. */
enum gk_status {
    GK_OK = 0,
    GK_CANCELLED = 1,  /* the person or the host cancelled: return GK_OUTCOME_CANCELLED soon */
    GK_FAILED = 2,     /* the question could not be asked (or the answer was unusable) */
};

/*
 * The conversation of one login, given by the host to `authenticate`. Valid only during that call.
 */
struct gk_conversation {
    uint32_t abi_version;
    uint32_t size; /* sizeof(struct gk_conversation) as the host knows it */
    void *context; /* the host's; pass it back unchanged */
    /*
     * Asks a question (GK_ASK_HIDDEN or GK_ASK_VISIBLE) and blocks until it is answered. On GK_OK,
     * `*answer` points at `*length` bytes (valid UTF-8, no NUL) followed by a NUL, owned by the host
     * until `authenticate` returns.
     */
    int (*ask)(void *context, int style, const char *prompt, const char **answer, size_t *length);
    /* Shows a message (GK_SHOW_INFO or GK_SHOW_ERROR). */
    int (*show)(void *context, int style, const char *message);
    /* Nonzero once the login is cancelled (the host also calls the plugin's `cancel`). */
    int (*is_cancelled)(void *context);
};

/* The answer of `authenticate`. */
enum gk_outcome_kind {
    GK_OUTCOME_AUTHENTICATED = 1, /* the identity fields say who */
    GK_OUTCOME_REJECTED = 2,      /* `rejection` says why */
    GK_OUTCOME_NOT_MINE = 3,      /* the plugin does not know the user (PAM's user_unknown) */
    GK_OUTCOME_UNAVAILABLE = 4,   /* the backend could not answer; `reason` says why (no secret) */
    GK_OUTCOME_IGNORED = 5,       /* nothing applies (PAM's ignore) */
    GK_OUTCOME_CANCELLED = 6,     /* a question was cancelled */
};

enum gk_rejection {
    GK_REJECT_WRONG_CREDENTIALS = 1,
    GK_REJECT_LOCKED = 2,
    GK_REJECT_EXPIRED_ACCOUNT = 3,
    GK_REJECT_PASSWORD_CHANGE_REQUIRED = 4,
    GK_REJECT_POLICY = 5,
    GK_REJECT_TOO_MANY_TRIES = 6,
    GK_REJECT_ACTIVATION_REQUIRED = 7, /* the right password, for an account not activated yet */
};

/*
 * Filled in by `authenticate`. Strings are NUL-terminated UTF-8 owned by the plugin; the host copies
 * what it needs, then calls `release_outcome` (if not NULL) so the plugin can free them.
 */
struct gk_outcome {
    int kind;                        /* enum gk_outcome_kind */
    int rejection;                   /* enum gk_rejection, for GK_OUTCOME_REJECTED */
    const char *username;            /* the account's own spelling (optional; REJECTED or AUTHENTICATED) */
    const char *display_name;        /* optional */
    const char *const *groups;       /* `group_count` group names */
    size_t group_count;
    const char *const *attribute_keys;   /* `attribute_count` key/value pairs, never a secret */
    const char *const *attribute_values;
    size_t attribute_count;
    const char *reason;              /* for GK_OUTCOME_UNAVAILABLE */
    void *plugin_data;               /* the plugin's, for release_outcome */
};

/* An option the plugin accepts, as `name=value` in a configuration file. */
struct gk_option {
    const char *name;
    const char *value_name; /* for help: "PATH", "SECONDS" */
    const char *help;
};

struct gk_plugin {
    uint32_t abi_version; /* GK_PLUGIN_ABI_VERSION */
    uint32_t size;        /* sizeof(struct gk_plugin) as the plugin knows it */
    const char *name;     /* short, stable: used in identities and audit records */
    const char *summary;  /* one line */
    const struct gk_option *options;
    size_t option_count;
    /*
     * Makes an instance from the configured options (only names from `options`). Returns NULL and sets
     * `*error` (malloc'ed, freed by the host with free()) when it cannot.
     */
    void *(*create)(const char *const *names, const char *const *values, size_t count, char **error);
    /* Checks who the person is; returns 0 and fills `outcome`. Blocking is allowed. */
    int (*authenticate)(
        void *instance, const char *username, const struct gk_conversation *conversation, struct gk_outcome *outcome);
    /* Frees what `authenticate` put in `outcome`. May be NULL. */
    void (*release_outcome)(void *instance, struct gk_outcome *outcome);
    /* The login with this conversation context was cancelled; `authenticate` should return soon. May be NULL. */
    void (*cancel)(void *instance, void *conversation_context);
    /* The identity signed out. May be NULL. */
    void (*sign_out)(void *instance, const char *username);
    /* The instance is no longer used. May be NULL. */
    void (*destroy)(void *instance);
};

typedef const struct gk_plugin *(*gk_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* GATEKEEPER_PLUGIN_H */
