#!/usr/bin/env python3
"""An OpenID Connect provider of the tests' own, that answers well or as badly as a test asks.

    oidc_test_server.py DIRECTORY WATCHED_PID [--tls CERT KEY]

Listens on 127.0.0.1 on a free port, written to DIRECTORY/port; stops when WATCHED_PID is gone. A test
sets how it behaves with POST /control (a JSON object: "mode", and "pending" for the device flow), and
reads what was asked of it with GET /log. Modes:

  good, es256, eddsa          tokens signed as they should be (RS256, ES256, EdDSA)
  other-key, unknown-kid      signed by a key not in the set (with the set's key id, or a new one)
  rotated                     signed by a new key that the set holds from its second fetch on
  alg-none, hs256             no signature; HMAC with the public key as the secret
  wrong-iss, wrong-aud, expired, future-iat, several-aud, wrong-azp, bad-at-hash, no-sub
  userinfo-other-sub          userinfo answers about another subject
  bob                         tokens for bob whoever signs in
  invalid-grant, access-denied, empty-403, garbage, huge, slow, redirect, not-bearer
  expired-token, slow-down    the device flow's answers (after "pending" authorization_pending ones)
  issuer-mismatch             discovery names another issuer
  userinfo-in-url             discovery's token endpoint has a user part (http://127.0.0.1:80@192.0.2.2/)
  duplicate-claim, no-nonce   a claim named twice; no nonce though one was sent
  big-rsa                     signed with a key whose modulus is 16,384 bits long (the set holds it)
  as-user                     tokens for the name in "user" (of /control) whoever signs in
  refresh-without-id          refreshes answer without an ID token (as glewlwyd's do)
  device-elsewhere            the device answer's verification_uri is plain http:// to another host
  echo-password               the token endpoint refuses with the password in its error_description
  echo-secret                 the token endpoint refuses with part of the client's secret, upper case
  odd-error                   the device endpoint refuses with an error code of its own and escapes
"""
import base64
import hashlib
import hmac
import json
import os
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

directory, watched = sys.argv[1], int(sys.argv[2])
tls = sys.argv[3:6] if len(sys.argv) > 3 and sys.argv[3] == "--tls" else None

CLIENT_ID, CLIENT_SECRET = "gatekeeper", "test-client-secret"
USERS = {"alice": "wonderland", "bob": "builder"}


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def number(value):
    return b64(value.to_bytes((value.bit_length() + 7) // 8, "big"))


rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
new_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
ec_key = ec.generate_private_key(ec.SECP256R1())
ed_key = ed25519.Ed25519PrivateKey.generate()


def rsa_jwk(key, kid):
    numbers = key.public_key().public_numbers()
    return {"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": number(numbers.n), "e": number(numbers.e)}


def ec_jwk(key, kid):
    numbers = key.public_key().public_numbers()
    return {"kty": "EC", "kid": kid, "crv": "P-256", "x": b64(numbers.x.to_bytes(32, "big")),
            "y": b64(numbers.y.to_bytes(32, "big"))}


def ed_jwk(key, kid):
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return {"kty": "OKP", "kid": kid, "crv": "Ed25519", "x": b64(raw)}


state = {"mode": "good", "pending": 0, "user": "alice", "polls": 0, "jwks_fetches": 0, "log": [], "refresh": {}, "access": {}, "revoked": set()}
lock = threading.Lock()


def sign(claims, mode, kid="rsa-1"):
    header = {"typ": "JWT", "alg": "RS256", "kid": kid}
    key = rsa_key
    if mode == "es256":
        header.update(alg="ES256", kid="ec-1")
    elif mode == "eddsa":
        header.update(alg="EdDSA", kid="ed-1")
    elif mode == "other-key":
        key = other_key
    elif mode == "unknown-kid":
        header["kid"], key = "missing-1", other_key
    elif mode == "rotated":
        header["kid"], key = "rsa-2", new_key
    elif mode == "alg-none":
        header = {"typ": "JWT", "alg": "none"}
    elif mode == "hs256":
        header = {"typ": "JWT", "alg": "HS256", "kid": "rsa-1"}
    if mode == "big-rsa":
        header["kid"] = "big-1"
    payload = json.dumps(claims).encode()
    if mode == "duplicate-claim":
        payload = payload[:-1] + b', "preferred_username": "bob"}'
    signing_input = (b64(json.dumps(header).encode()) + "." + b64(payload)).encode()
    if header["alg"] == "none":
        signature = b""
    elif header["alg"] == "HS256":
        secret = rsa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo)
        signature = hmac.new(secret, signing_input, hashlib.sha256).digest()
    elif header["alg"] == "ES256":
        r, s = decode_dss_signature(ec_key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    elif header["alg"] == "EdDSA":
        signature = ed_key.sign(signing_input)
    else:
        signature = key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    return signing_input.decode() + "." + b64(signature)


def tokens(issuer, user, mode, nonce=None, refreshing=False):
    now = int(time.time())
    access = b64(os.urandom(24))
    if mode == "bob":
        user = "bob"
    elif mode == "as-user":
        user = state["user"]
    claims = {"iss": issuer, "sub": "subject-" + user, "aud": CLIENT_ID, "exp": now + 300, "iat": now,
              "preferred_username": user, "name": user.capitalize() + " Example", "email": user + "@example.test",
              "groups": ["staff", "readers"] if user == "alice" else [],
              # The hash of the signature's algorithm: SHA-512 for Ed25519.
              "at_hash": b64(hashlib.sha512(access.encode()).digest()[:32]) if mode == "eddsa"
              else b64(hashlib.sha256(access.encode()).digest()[:16])}
    if nonce and mode != "no-nonce":
        claims["nonce"] = nonce
    if mode == "wrong-iss":
        claims["iss"] = issuer + "/other"
    elif mode == "wrong-aud":
        claims["aud"] = "another-client"
    elif mode == "expired":
        claims["exp"], claims["iat"] = now - 3600, now - 7200
    elif mode == "future-iat":
        claims["iat"] = now + 3600
    elif mode == "several-aud":
        claims["aud"] = [CLIENT_ID, "another-client"]
    elif mode == "wrong-azp":
        claims["azp"] = "another-client"
    elif mode == "bad-at-hash":
        claims["at_hash"] = b64(b"0" * 16)
    elif mode == "no-sub":
        del claims["sub"]
    elif mode == "wrong-nonce":
        claims["nonce"] = "not-the-nonce"
    refresh = b64(os.urandom(24))
    with lock:
        state["refresh"][refresh] = user
        state["access"][access] = user
    answer = {"access_token": access, "token_type": "Bearer", "expires_in": 300, "refresh_token": refresh,
              "id_token": sign(claims, mode), "scope": "openid profile email"}
    if refreshing and mode == "refresh-without-id":
        del answer["id_token"], answer["refresh_token"]
    return answer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    @property
    def issuer(self):
        return ("https" if tls else "http") + "://127.0.0.1:%d" % self.server.server_address[1]

    def answer(self, status, body, content_type="application/json", extra=()):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def record(self, form=None):
        entry = {"path": self.path, "time": time.time(), "authorization": self.headers.get("Authorization", "")}
        if form:
            entry.update({name: values[0] for name, values in form.items() if name not in ("password",)})
        with lock:
            state["log"].append(entry)

    def client_ok(self, form):
        basic = self.headers.get("Authorization", "")
        if basic.startswith("Basic "):
            ident, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
            return ident == CLIENT_ID and secret == CLIENT_SECRET
        return form.get("client_id", [""])[0] == CLIENT_ID

    def do_GET(self):
        mode = state["mode"]
        if self.path != "/log":
            self.record()
        if self.path == "/log":
            with lock:
                return self.answer(200, {"log": state["log"], "jwks_fetches": state["jwks_fetches"],
                                         "revoked": sorted(state["revoked"])})
        if self.path == "/.well-known/openid-configuration":
            issuer = self.issuer + ("/elsewhere" if mode == "issuer-mismatch" else "")
            token = self.issuer + "/token"
            if mode == "userinfo-in-url":
                token = "http://127.0.0.1:80@192.0.2.2:9/token"
            return self.answer(200, {
                "issuer": issuer, "token_endpoint": token,
                "device_authorization_endpoint": self.issuer + "/device",
                "userinfo_endpoint": self.issuer + "/userinfo", "revocation_endpoint": self.issuer + "/revoke",
                "jwks_uri": self.issuer + "/jwks",
                "id_token_signing_alg_values_supported": ["RS256", "ES256", "EdDSA", "HS256", "none"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"]})
        if self.path == "/jwks":
            with lock:
                state["jwks_fetches"] += 1
                fetches = state["jwks_fetches"]
            keys = [rsa_jwk(rsa_key, "rsa-1"), ec_jwk(ec_key, "ec-1"), ed_jwk(ed_key, "ed-1"),
                    {"kty": "RSA", "kid": "enc-1", "use": "enc", "n": "AQAB", "e": "AQAB"}]
            if mode == "rotated" and fetches > 1:
                keys.append(rsa_jwk(new_key, "rsa-2"))
            if mode == "big-rsa":
                keys.append({"kty": "RSA", "kid": "big-1", "n": b64(b"\xff" * 2048), "e": "AQAB"})
            return self.answer(200, {"keys": keys})
        if self.path == "/userinfo":
            with lock:
                user = state["access"].get(self.headers.get("Authorization", "")[7:])
            if user is None:
                return self.answer(401, b"")
            sub = "subject-other" if mode == "userinfo-other-sub" else "subject-" + user
            return self.answer(200, {"sub": sub, "preferred_username": user,
                                     "picture": "https://example.test/alice.png"})
        self.answer(404, {"error": "not_found"})

    def do_POST(self):  # noqa: C901 (one branch a mode)
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        if self.path == "/control":
            settings = json.loads(raw)
            with lock:
                state.update(settings)
                state["polls"], state["log"], state["jwks_fetches"], state["revoked"] = 0, [], 0, set()
            return self.answer(200, {"ok": True})
        form = parse_qs(raw.decode())
        self.record(form)
        mode = state["mode"]
        if mode == "empty-403":
            return self.answer(403, b"")
        if mode == "garbage":
            return self.answer(200, b"\x00\xff{not json", "text/html")
        if mode == "huge":
            return self.answer(200, b"{\"a\":\"" + b"x" * (4 << 20) + b"\"}")
        if mode == "redirect":
            return self.answer(302, b"", extra=[("Location", "https://elsewhere.example/token")])
        if mode == "slow":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            try:
                for _ in range(100000):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.5)
            except OSError:
                pass
            return
        if self.path == "/revoke":
            if mode == "revoke-fails":
                return self.answer(503, {"error": "temporarily_unavailable"})
            if not self.client_ok(form):
                return self.answer(401, {"error": "invalid_client"})
            with lock:
                state["revoked"].add(form.get("token", [""])[0])
            return self.answer(200, b"")
        if self.path == "/device" and mode == "odd-error":
            return self.answer(400, {"error": "x\u001b[2J", "error_description": "Some \u001b[31m text"})
        if self.path == "/device":
            where = "http://192.0.2.2" if mode == "device-elsewhere" else self.issuer
            return self.answer(200, {"device_code": "device-" + b64(os.urandom(12)), "user_code": "WDJB-MJHT",
                                     "verification_uri": where + "/activate",
                                     "verification_uri_complete": self.issuer + "/activate?code=WDJB-MJHT",
                                     "expires_in": 30, "interval": 1})
        if self.path != "/token":
            return self.answer(404, {"error": "not_found"})
        if not self.client_ok(form):
            return self.answer(401, {"error": "invalid_client"})
        grant = form.get("grant_type", [""])[0]
        if mode == "invalid-grant":
            return self.answer(400, {"error": "invalid_grant", "error_description": "bad\x1b[31m password"})
        if mode == "access-denied":
            return self.answer(400, {"error": "access_denied"})
        if mode == "echo-secret":
            return self.answer(400, {"error": "invalid_client", "error_description":
                                     "client secret " + CLIENT_SECRET[2:12].upper() + " is not known"})
        if mode == "echo-password":
            return self.answer(400, {"error": "invalid_request", "error_description":
                                     "no user with the password " + form.get("password", [""])[0]})
        if grant == "password":
            user, password = form.get("username", [""])[0], form.get("password", [""])[0]
            if mode != "as-user" and USERS.get(user) != password:
                return self.answer(400, {"error": "invalid_grant", "error_description": "Invalid credentials"})
            answer = tokens(self.issuer, user, mode, form.get("nonce", [None])[0])
            if mode == "not-bearer":
                answer["token_type"] = "MAC"
            return self.answer(200, answer)
        if grant == "urn:ietf:params:oauth:grant-type:device_code":
            with lock:
                state["polls"] += 1
                polls = state["polls"]
            if polls <= state["pending"]:
                error = "slow_down" if mode == "slow-down" and polls == 1 else "authorization_pending"
                return self.answer(400, {"error": error})
            if mode == "expired-token":
                return self.answer(400, {"error": "expired_token"})
            return self.answer(200, tokens(self.issuer, "alice", mode))
        if grant == "refresh_token":
            token = form.get("refresh_token", [""])[0]
            with lock:
                user = state["refresh"].get(token) if token not in state["revoked"] else None
            if user is None:
                return self.answer(400, {"error": "invalid_grant"})
            return self.answer(200, tokens(self.issuer, user, mode, refreshing=True))
        self.answer(400, {"error": "unsupported_grant_type"})


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
if tls:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls[1], tls[2])
    server.socket = context.wrap_socket(server.socket, server_side=True)
with open(os.path.join(directory, "port.tmp"), "w") as file:
    file.write(str(server.server_address[1]))
os.rename(os.path.join(directory, "port.tmp"), os.path.join(directory, "port"))


def watchdog():
    while True:
        try:
            os.kill(watched, 0)
        except OSError:
            os._exit(0)
        time.sleep(1)


threading.Thread(target=watchdog, daemon=True).start()
server.serve_forever()
