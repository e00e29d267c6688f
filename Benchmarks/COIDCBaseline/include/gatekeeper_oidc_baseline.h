#ifndef GATEKEEPER_OIDC_BASELINE_H
#define GATEKEEPER_OIDC_BASELINE_H

/// `count` password-grant logins with libcurl alone, one after another: per login the requests the oidc
/// provider makes once the provider's metadata and keys are known — a POST to the token endpoint (the
/// client's secret in HTTP Basic) and a GET of userinfo with the access token — each on a handle of its
/// own, as the provider's are. Returns the seconds taken, or a negative number when a request fails.
double gatekeeper_oidc_baseline(const char *token_url, const char *userinfo_url, const char *client_id,
                                const char *client_secret, const char *user, const char *password, int count);

#endif
