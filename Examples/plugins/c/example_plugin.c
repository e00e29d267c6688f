/*
 * An example provider plugin written in C: accounts from a `users=` option (`name:password,...`), for
 * demonstrations and tests — never real passwords. Build it with
 *
 *     gcc -shared -fPIC -O2 -I Sources/CLibraries/CGatekeeperPlugin/include -o example.so Examples/plugins/c/example_plugin.c
 *
 * and name it in a configuration file by absolute path:
 *
 *     sufficient /usr/lib/gatekeeper/plugins/example.so users=alice:wonderland
 */
#include <stdlib.h>
#include <string.h>

#include "gatekeeper_plugin.h"

struct account {
    char *name;
    char *password;
};

struct instance {
    struct account *accounts;
    size_t count;
};

static const struct gk_option options[] = {
    {"users", "NAME:PASSWORD,...", "the accounts"},
};

/* Compares without stopping at the first difference, so the time does not tell how much matched. */
static int same(const char *a, size_t a_length, const char *b) {
    size_t b_length = strlen(b);
    unsigned char difference = (unsigned char)(a_length != b_length);
    for (size_t i = 0; i < a_length; i++) difference |= (unsigned char)(a[i] ^ (i < b_length ? b[i] : 0));
    return difference == 0;
}

static void destroy(void *pointer) {
    struct instance *instance = pointer;
    if (!instance) return;
    for (size_t i = 0; i < instance->count; i++) {
        free(instance->accounts[i].name);
        free(instance->accounts[i].password);
    }
    free(instance->accounts);
    free(instance);
}

static void *create(const char *const *names, const char *const *values, size_t count, char **error) {
    const char *users = NULL;
    for (size_t i = 0; i < count; i++)
        if (strcmp(names[i], "users") == 0) users = values[i];
    if (!users || !*users) {
        *error = strdup("users= is required (name:password,...)");
        return NULL;
    }
    struct instance *instance = calloc(1, sizeof *instance);
    char *copy = strdup(users);
    if (!instance || !copy) {
        free(instance);
        free(copy);
        *error = strdup("out of memory");
        return NULL;
    }
    char *saved = NULL;
    for (char *pair = strtok_r(copy, ",", &saved); pair; pair = strtok_r(NULL, ",", &saved)) {
        char *colon = strchr(pair, ':');
        if (!colon || colon == pair) {
            free(copy);
            destroy(instance);
            *error = strdup("users= takes name:password pairs separated by commas");
            return NULL;
        }
        *colon = '\0';
        struct account *grown = realloc(instance->accounts, (instance->count + 1) * sizeof *grown);
        if (!grown) break;
        instance->accounts = grown;
        instance->accounts[instance->count].name = strdup(pair);
        instance->accounts[instance->count].password = strdup(colon + 1);
        instance->count++;
    }
    free(copy);
    return instance;
}

static int authenticate(
    void *pointer, const char *username, const struct gk_conversation *conversation, struct gk_outcome *outcome) {
    struct instance *instance = pointer;
    memset(outcome, 0, sizeof *outcome);
    /* Asked whether or not the user exists, so the prompts do not tell names apart. */
    const char *password = NULL;
    size_t length = 0;
    int status = conversation->ask(conversation->context, GK_ASK_HIDDEN, "Password: ", &password, &length);
    if (status != GK_OK) {
        outcome->kind = GK_OUTCOME_CANCELLED;
        return 0;
    }
    const struct account *found = NULL;
    for (size_t i = 0; i < instance->count; i++)
        if (strcmp(instance->accounts[i].name, username) == 0) found = &instance->accounts[i];
    if (!found) {
        outcome->kind = GK_OUTCOME_NOT_MINE;
        return 0;
    }
    if (!same(password, length, found->password)) {
        outcome->kind = GK_OUTCOME_REJECTED;
        outcome->rejection = GK_REJECT_WRONG_CREDENTIALS;
        return 0;
    }
    static const char *const groups[] = {"plugin-users"};
    outcome->kind = GK_OUTCOME_AUTHENTICATED;
    outcome->username = found->name;
    outcome->groups = groups;
    outcome->group_count = 1;
    return 0;
}

static const struct gk_plugin plugin = {
    .abi_version = GK_PLUGIN_ABI_VERSION,
    .size = sizeof(struct gk_plugin),
    .name = "c-example",
    .summary = "accounts from the users= option (a C plugin)",
    .options = options,
    .option_count = sizeof options / sizeof options[0],
    .create = create,
    .authenticate = authenticate,
    .release_outcome = NULL, /* nothing in the outcome is allocated */
    .cancel = NULL,          /* the only wait is the host's question, which the host cancels */
    .sign_out = NULL,
    .destroy = destroy,
};

const struct gk_plugin *gatekeeper_plugin_entry(void) { return &plugin; }
